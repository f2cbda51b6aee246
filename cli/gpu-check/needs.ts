/**
 * What the CUDA path needs that this machine lacks, each with the command that provides it: a
 * driver, a CUDA build of torch, onnxruntime-node's CUDA provider files (fetched at install time, so
 * an offline machine lacks them) and the CUDA 12 / cuDNN 9 libraries that provider loads.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { CudaProviderFiles } from '../../policies/onnx/provider-check.js';
import type { TorchProbe } from './python-checks.js';
import type { GpuNeed } from './rows.js';

/** The shared libraries onnxruntime's CUDA 12 provider opens (onnxruntime.ai, CUDA execution provider). */
const PROVIDER_LIBRARIES = ['libcudart.so.12', 'libcublasLt.so.12', 'libcudnn.so.9', 'libcufft.so.11'];

/** The pip packages (NVIDIA's wheels, which torch's CUDA 12 builds also install) holding those libraries. */
const PROVIDER_WHEELS = 'nvidia-cuda-runtime-cu12 nvidia-cublas-cu12 nvidia-cudnn-cu12 nvidia-cufft-cu12';

/** Library names the dynamic loader knows (`ldconfig -p`). */
function loaderLibraries(): Set<string> {
  // ldconfig lives in /sbin, which a non-root PATH may lack
  const found = ['ldconfig', '/sbin/ldconfig']
    .map((cmd) => spawnSync(cmd, ['-p'], { encoding: 'utf8' }))
    .find((out) => out.status === 0);
  return new Set((found?.stdout ?? '').split('\n').map((l) => l.trim().split(' ')[0] ?? ''));
}

/** The `nvidia/<part>/lib` folders of the trainer venv's NVIDIA wheels holding `name`. */
function venvLibraryDirs(python: string, name: string): string[] {
  const lib = join(dirname(python), '..', 'lib');
  if (!existsSync(lib)) return [];
  return readdirSync(lib)
    .map((py) => join(lib, py, 'site-packages', 'nvidia'))
    .filter((nvidia) => existsSync(nvidia))
    .flatMap((nvidia) => readdirSync(nvidia).map((part) => join(nvidia, part, 'lib')))
    .filter((dir) => existsSync(join(dir, name)));
}

/** The provider libraries and where they are: found by the loader, only in the venv, or nowhere. */
export function providerLibraries(python: string, known = loaderLibraries()): GpuNeed[] {
  const inVenv = PROVIDER_LIBRARIES.filter((name) => !known.has(name)).map((name) => ({
    name,
    dirs: venvLibraryDirs(python, name),
  }));
  const needs: GpuNeed[] = [];
  const onlyVenv = inVenv.filter((l) => l.dirs.length > 0);
  const nowhere = inVenv.filter((l) => l.dirs.length === 0);
  if (onlyVenv.length > 0)
    needs.push({
      what: `${onlyVenv.map((l) => l.name).join(', ')} only in the trainer venv: onnxruntime-node's CUDA provider will not find them`,
      fix: `export LD_LIBRARY_PATH=${[...new Set(onlyVenv.flatMap((l) => l.dirs))].join(':')}:$LD_LIBRARY_PATH`,
    });
  if (nowhere.length > 0)
    needs.push({
      what: `${nowhere.map((l) => l.name).join(', ')} (CUDA 12, cuDNN 9) for onnxruntime-node's CUDA provider`,
      fix: `trainer/.venv/bin/pip install ${PROVIDER_WHEELS}, then export LD_LIBRARY_PATH=<the venv's site-packages/nvidia/*/lib> (or install CUDA 12 and cuDNN 9 system-wide)`,
    });
  return needs;
}

/** Everything the CUDA path lacks here. */
export function cudaNeeds(
  probe: TorchProbe | undefined,
  files: CudaProviderFiles,
  python: string,
): GpuNeed[] {
  const needs: GpuNeed[] = [];
  if (spawnSync('nvidia-smi', ['-L'], { encoding: 'utf8' }).status !== 0)
    needs.push({
      what: 'an NVIDIA driver (no working nvidia-smi)',
      fix: 'install the NVIDIA driver for the GPU (e.g. apt-get install nvidia-driver-550), then reboot',
    });
  if (probe && probe.torch_cuda === null)
    needs.push({
      what: `a CUDA build of torch (trainer/.venv has torch ${probe.torch}, a CPU build: torch.version.cuda is None)`,
      fix: 'trainer/.venv/bin/pip install --force-reinstall torch --index-url https://download.pytorch.org/whl/cu126',
    });
  if (files.missing.length > 0)
    needs.push({
      what: `onnxruntime-node's CUDA provider files (${files.missing.join(', ')} in ${files.folder}; the install ran with ONNXRUNTIME_NODE_INSTALL_CUDA=skip)`,
      fix: `${files.install}   # fetches Microsoft.ML.OnnxRuntime.Gpu.Linux from api.nuget.org; offline, copy its runtimes/linux-x64/native/*.so there`,
    });
  return [...needs, ...providerLibraries(python)];
}
