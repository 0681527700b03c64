/** `mocapi/redis`: the Redis bus and stores, apart from the core so only apps using them load `redis`. */
export { RedisBus, type RedisBusOptions, type RedisConnection } from './bus.js'
export { RedisTaskStore, type RedisTaskStoreOptions, type RedisTaskConnection } from './task-store.js'
export { RedisReceiptStore, type RedisReceiptStoreOptions } from './receipt-store.js'
export { RedisEventLog, type RedisEventLogOptions } from './event-log.js'
