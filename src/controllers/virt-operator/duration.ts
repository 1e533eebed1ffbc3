/** Go `time.Duration` strings (the parser lives with the API, which validation shares). */
export { parseDuration } from '../../api/duration';
