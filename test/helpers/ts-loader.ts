/**
 * The node arguments that load the TypeScript sources as tap loads them in this process
 * (.taprc's `node-arg`: tsx), for a child process that imports `src/` without a build.
 */
export const TS_LOADER_ARGS: readonly string[] = process.execArgv.filter((arg) => arg === '--import=tsx')
