/**
 * The native kernels from TypeScript: open a context, make tensors, call ops.
 *
 * @example
 * ```ts ignore
 * import { Kernels, linearForward, Tensor } from "./mod.ts";
 * using k = Kernels.open();
 * using x = Tensor.from(k, new Float32Array([1, 2]), [1, 2]);
 * using w = Tensor.from(k, new Float32Array([3, 4]), [1, 2]);
 * using y = new Tensor(k, [1, 1], "f32");
 * linearForward(k, y, x, w);
 * console.log(y.view()[0]); // 11
 * ```
 *
 * @module
 */
export { KernelError, type KernelOptions, Kernels } from "./kernels.ts";
export { type DeviceKind, KernelLibraryError, libraryPath, openLibrary } from "./library.ts";
export { type DType, expectTensor, Tensor } from "./tensor.ts";
export { isNormalF32 } from "./ops/_args.ts";
export { KernelGraph } from "./graph.ts";
export * from "./ops/matmul.ts";
export * from "./ops/layers.ts";
export * from "./ops/decode_fusion.ts";
export * from "./ops/decode_layer.ts";
export * from "./ops/attention.ts";
export * from "./ops/logprob.ts";
export * from "./ops/losses.ts";
export * from "./ops/optim.ts";
export * from "./ops/l2.ts";
export * from "./ops/sample.ts";
