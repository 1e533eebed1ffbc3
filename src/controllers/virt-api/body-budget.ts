/**
 * A byte budget for request bodies being read, parsed and admitted. Each body holds its size
 * from the first byte until its answer is sent, and a parsed AdmissionReview costs several
 * times its bytes in heap: without a bound, ten concurrent 8 MB reviews delayed a small one
 * 19 s (past the API server's 10 s webhook timeout) and thirty left 2.2 GB resident. A body
 * that does not fit is refused at once with 429 (queueing big ones kept the event loop busy
 * with them, and a small review waited behind their parsing); small bodies may also use a
 * reserve the large ones cannot, so normal reviews stay fast under a flood of big ones.
 */
import type { Readable } from 'node:stream';
import { HttpError } from './http-error';

/** How a {@link BodyBudget} is sized. */
export interface BodyBudgetOptions {
  /** Bytes all bodies in flight may hold together. */
  capacity: number;
  /** Of `capacity`, bytes only small bodies may use. */
  reserve: number;
  /** A body of at most this many bytes is small. */
  smallBytes: number;
  /**
   * How long reading one body may take (ms): a sender trickling bytes would hold its share
   * of the budget for as long as it liked. kube-apiserver sends a review at once, and its
   * webhook calls time out after 10 s by default (30 s at most).
   */
  readTimeoutMs: number;
}

/** Defaults: one 8 MiB AdmissionReview at a time (its admission is CPU-bound), and 8 MiB more for small ones. */
export const DEFAULT_BODY_BUDGET: BodyBudgetOptions = {
  capacity: 16 * 1024 * 1024,
  reserve: 8 * 1024 * 1024,
  smallBytes: 256 * 1024,
  readTimeoutMs: 10_000,
};

/** Bytes held by request bodies in flight. */
export class BodyBudget {
  private used = 0;

  constructor(readonly options: BodyBudgetOptions = DEFAULT_BODY_BUDGET) {}

  /** Bytes held now. */
  get inUse(): number {
    return this.used;
  }

  /**
   * Takes `more` bytes for a body that will then hold `total`, or refuses with 429 naming
   * the budget: whether it may use the reserve depends on the body's whole size.
   */
  take(more: number, total: number, what: string): void {
    const o = this.options;
    const limit = total <= o.smallBytes ? o.capacity : o.capacity - o.reserve;
    if (this.used + more > limit) {
      const mib = (n: number) => `${(n / 1048576).toFixed(1)} MiB`;
      throw new HttpError(
        429,
        `${what} of ${total} bytes refused: ${mib(this.used)} of request bodies are being admitted, the budget is ${mib(o.capacity)}; retry later`,
      );
    }
    this.used += more;
  }

  /** Gives back `bytes`. */
  release(bytes: number): void {
    this.used -= bytes;
  }
}

/** A body read within a budget: its bytes, and `done` to call once its answer is sent. */
export interface BudgetedBody {
  body: Buffer;
  done: () => void;
}

/**
 * Reads `req`'s body of at most `max` bytes, holding its size in `budget` until `done`.
 * A declared Content-Length over `max` is refused with 413 before a byte is read; one
 * within it is taken from the budget up front (or 429); a body without one is taken chunk
 * by chunk as it arrives. A body not read within `readTimeoutMs` gets 408.
 */
export async function readBudgetedBody(
  req: Readable & { headers: Record<string, string | string[] | undefined> },
  budget: BodyBudget,
  max: number,
  what: string,
): Promise<BudgetedBody> {
  const declared = Number(req.headers['content-length'] ?? Number.NaN);
  if (declared > max) throw new HttpError(413, `${what} of ${declared} bytes exceeds the ${max}-byte limit`);
  let held = 0;
  const done = () => {
    budget.release(held);
    held = 0;
  };
  if (Number.isFinite(declared) && declared > 0) {
    budget.take(declared, declared, what);
    held = declared;
  }
  try {
    const body = await new Promise<Buffer>((resolve, reject) => {
      const chunks: Buffer[] = [];
      let size = 0;
      let failed = false;
      const fail = (e: unknown) => {
        failed = true;
        chunks.length = 0;
        clearTimeout(timer);
        reject(e);
      };
      const timeoutMs = budget.options.readTimeoutMs;
      const timer = setTimeout(
        () =>
          fail(new HttpError(408, `${what} not received within ${timeoutMs / 1000} s (${size} bytes read)`)),
        timeoutMs,
      );
      // Listeners, not `for await`: leaving that loop by a throw destroys the request, and
      // with it the connection the 413 or 429 is to be answered on.
      req.on('data', (chunk: Buffer) => {
        if (failed) return;
        size += chunk.length;
        try {
          if (size > max) throw new HttpError(413, `${what} exceeds the ${max}-byte limit`);
          // No (or a short) Content-Length: the bytes past what was declared are taken now.
          if (size > held) {
            budget.take(size - held, size, what);
            held = size;
          }
          chunks.push(chunk);
        } catch (e) {
          fail(e);
        }
      });
      req.on('end', () => {
        clearTimeout(timer);
        if (!failed) resolve(Buffer.concat(chunks));
      });
      req.on('error', fail);
    });
    return { body, done };
  } catch (e) {
    done();
    throw e;
  }
}
