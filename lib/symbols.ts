/** @internal The key of a context's call record (`CallState`), for mocapi's own modules. */
export const kCallState: unique symbol = Symbol('mocapi.callState')

/** @internal The key of what an era prepared of a request, on the Fastify request. */
export const kPrepared: unique symbol = Symbol('mocapi.prepared')
