/**
 * The LLM policy on onnxruntime-node (streams/policies/onnx/README.md). `onnxPolicy({folder})`
 * turns an exported policy artifact into a `Policy`.
 */
export { onnxPolicy, SPA_MAX_NEW_TOKENS, type OnnxPolicy, type OnnxPolicyOptions } from './onnx-policy.js';
export { loadPolicyArtifact, sha256File, type PolicyArtifact, type PolicyManifest } from './artifact.js';
export type { ExecutionProvider } from './causal-lm.js';
export type { Generation } from './generate.js';
export { ANSWER_END, type StopReason } from './stop-detector.js';
