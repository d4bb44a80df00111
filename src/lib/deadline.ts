/**
 * A piece of work given up after `ms`: the promise rejects with the error `expired` makes (which
 * may also undo what the work holds, such as a connection). The work itself is not cancelled.
 */
export function rejectAfter<T>(work: Promise<T>, ms: number, expired: () => Error): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(expired()), ms);
  });
  return Promise.race([work, late]).finally(() => clearTimeout(timer));
}
