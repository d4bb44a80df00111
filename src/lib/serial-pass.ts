/**
 * A background job's pass, run one at a time: `wake()` asks for a pass. Wakes within one turn of
 * the event loop cause one pass, and a wake while a pass runs (it awaits the database) causes
 * exactly one more after it, never a second at once. Nothing runs while `enabled()` is false.
 */
export class SerialPass {
  private scheduled = false;
  private running = false;
  private again = false;

  constructor(
    private readonly pass: () => Promise<void>,
    private readonly enabled: () => boolean,
  ) {}

  wake(): void {
    if (this.scheduled || !this.enabled()) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      void this.run();
    });
  }

  private async run(): Promise<void> {
    if (!this.enabled()) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = true;
    try {
      await this.pass();
    } finally {
      this.running = false;
      if (this.again) {
        this.again = false;
        this.wake();
      }
    }
  }
}
