/**
 * `mocapi/redis`: the Redis pub/sub notification bus, kept apart from the core so that only the
 * apps that use it load the `redis` package (which they install themselves).
 */
export { RedisBus, type RedisBusOptions, type RedisConnection } from './bus/redis.js'
