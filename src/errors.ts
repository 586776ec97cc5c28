// Errors that carry the CLI exit code they map to (docs/cli.md lists the codes).

export const EXIT = { ok: 0, runtime: 1, usage: 2, badModel: 3, backend: 4 } as const;

export class ToyError extends Error {
  constructor(message: string, readonly exitCode: number = EXIT.runtime) {
    super(message);
    this.name = "ToyError";
  }
}

/** A usage error: a wrong flag or argument (exit 2). */
export class UsageError extends ToyError {
  constructor(message: string) {
    super(message, EXIT.usage);
    this.name = "UsageError";
  }
}

/** A model file that is malformed, truncated or unsupported (exit 3). */
export class ModelFileError extends ToyError {
  constructor(message: string) {
    super(message, EXIT.badModel);
    this.name = "ModelFileError";
  }
}

/** A backend that was asked for but is not available (exit 4). */
export class BackendError extends ToyError {
  constructor(message: string) {
    super(message, EXIT.backend);
    this.name = "BackendError";
  }
}

/** A data file (IDX, PNG, JPEG) that is malformed, truncated or unsupported (exit 3, as a bad model file). */
export class DataFileError extends ToyError {
  constructor(message: string) {
    super(message, EXIT.badModel);
    this.name = "DataFileError";
  }
}
