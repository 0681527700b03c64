/** `mocapi/redis`: the Redis pub/sub bus, apart from the core so only apps using it load `redis` (they install it). */
export { RedisBus, type RedisBusOptions, type RedisConnection } from './bus.js'
export { RedisTaskStore, type RedisTaskStoreOptions, type RedisTaskConnection } from './task-store.js'
