// Automatic differentiation: a tape (./tape.ts) and the differentiable ops (./ops).
export { Tape, Var, accumulate } from "./tape.js";
export * from "./ops/index.js";
