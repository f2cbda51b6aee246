/**
 * `spa doctor`'s check that onnxruntime-node's native binding loads. The import is dynamic so a
 * broken binding is a finding of the doctor rather than a crash when the CLI starts; it lives here
 * because onnxruntime-node is imported only in policies/onnx/ (.dependency-cruiser.cjs).
 */
export async function loadOnnxRuntime(): Promise<void> {
  const ort = await import('onnxruntime-node');
  if (typeof ort.InferenceSession?.create !== 'function') throw new Error('no InferenceSession');
}
