/** Thrown when a VMI cannot be rendered into a pod; the message names the field. */
export class PodRenderError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'PodRenderError';
  }
}
