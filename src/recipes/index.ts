export { warmStart, type RealizedRun } from "./warmStart.js";
