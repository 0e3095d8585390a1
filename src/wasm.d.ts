/** The bundler (wrangler, and the Workers Vitest plugin in tests) turns a .wasm import into a compiled module. */
declare module "*.wasm" {
  const module: WebAssembly.Module;
  export default module;
}
