// What the main thread and the webgpu training thread (./webgpu.ts, ./webgpuWorker.ts) share:
// a control word the main thread waits on, and each request's arrays in one shared buffer.

/** Indices into the control words (Int32Array). */
export const CONTROL = { state: 0, errorLength: 1 } as const;
/** Values of the state word: the main thread sets `waiting` before posting a request. */
export const STATE = { waiting: 0, done: 1, failed: 2 } as const;

/** Where one array of a request lies in the shared data buffer. */
export interface ArraySlot {
  offset: number;
  length: number;
  kind: "f32" | "i32";
}

export interface Request {
  op: string;
  /** The op's numbers and option objects (structured-cloned). */
  scalars: Record<string, unknown>;
  /** The op's arrays in order (null: an absent optional output). */
  arrays: (ArraySlot | null)[];
  data: SharedArrayBuffer;
}
