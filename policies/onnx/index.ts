/**
 * The LLM policy on onnxruntime-node (policies/onnx/README.md). `onnxPolicy({folder})`
 * turns an exported policy artifact into a `Policy`.
 */
export { onnxPolicy, type OnnxPolicy } from './onnx-policy.js';
export { loadPolicyArtifact, readManifest, verifiedModel } from './artifact.js';
