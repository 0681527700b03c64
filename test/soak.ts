/**
 * The soak and fuzz tests run a size that reaches every branch they test by default, and their full size with
 * MOCAPI_SOAK=1 (before a release, or after changing what they soak: the codec, the stream limits, the compiler).
 */
export const SOAK = process.env.MOCAPI_SOAK === '1'

/** `full` under MOCAPI_SOAK=1, `small` otherwise. */
export function soakSize<T> (small: T, full: T): T {
  return SOAK ? full : small
}
