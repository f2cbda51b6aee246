/**
 * Python's `str()`/`repr()` of numbers, because SPA writes turn rewards into prompts with
 * `f"Reward:\n{reward}\n"` (docs/spa-prompts.md#reward-text) and JS prints numbers differently (`0` vs `0.0`,
 * `1e-7` vs `1e-07`, exponent thresholds). Hand-written: no npm library reproduces CPython's
 * float formatting.
 */

/** Python's `repr(float)` switches to exponent form outside 1e-4 ≤ |x| < 1e16 (`float_repr_style` 'short'). */
const PY_MIN_DECIMAL_EXPONENT = -4;
const PY_MAX_DECIMAL_EXPONENT = 16;

/** Shortest round-trip digits (no leading/trailing zeros) and the scientific exponent of |x| > 0. */
function shortestDigits(x: number): { digits: string; exponent: number } {
  // JS Number::toString already yields the shortest round-trip digits, closest to x, like
  // CPython's repr; only the layout differs, so we parse it and re-layout.
  const match = /^(\d+)(?:\.(\d+))?(?:e([+-]\d+))?$/.exec(String(Math.abs(x)));
  if (match === null) throw new Error(`unexpected JS number text for ${x}`);
  const intPart = match[1] ?? '';
  const allDigits = intPart + (match[2] ?? '');
  const leadingZeros = allDigits.length - allDigits.replace(/^0+/, '').length;
  const digits = allDigits.replace(/^0+/, '').replace(/0+$/, '');
  const exponent = intPart.length + Number(match[3] ?? 0) - leadingZeros - 1;
  return { digits, exponent };
}

/** `repr(x)` for a finite, non-zero Python float. */
function reprFiniteFloat(x: number): string {
  const sign = x < 0 ? '-' : '';
  const { digits, exponent } = shortestDigits(x);
  if (exponent >= PY_MIN_DECIMAL_EXPONENT && exponent < PY_MAX_DECIMAL_EXPONENT) {
    if (exponent < 0) return `${sign}0.${'0'.repeat(-exponent - 1)}${digits}`;
    const intDigits = exponent + 1;
    if (digits.length <= intDigits) return `${sign}${digits.padEnd(intDigits, '0')}.0`;
    return `${sign}${digits.slice(0, intDigits)}.${digits.slice(intDigits)}`;
  }
  const mantissa = digits.length === 1 ? digits : `${digits.slice(0, 1)}.${digits.slice(1)}`;
  const expSign = exponent < 0 ? '-' : '+';
  return `${sign}${mantissa}e${expSign}${String(Math.abs(exponent)).padStart(2, '0')}`;
}

/**
 * Python's `str(x)` (= `repr(x)`) of a number that is a Python `float` (`isFloat`) or `int`.
 * Floats: `0.0`, `-0.1`, `-0.30000000000000004`, `1e-05`, `1e+16`, `inf`, `nan`.
 * Ints: plain digits; throws a RangeError if `x` is not an integer.
 */
export function pyRepr(x: number, isFloat: boolean): string {
  if (!isFloat) {
    if (!Number.isInteger(x)) {
      throw new RangeError(`pyRepr: ${x} is not an integer; pass isFloat=true for a Python float`);
    }
    return BigInt(x).toString(); // exact digits even above 2^53, unlike String(1e21) = "1e+21"
  }
  if (Number.isNaN(x)) return 'nan';
  if (x === Infinity) return 'inf';
  if (x === -Infinity) return '-inf';
  if (x === 0) return Object.is(x, -0) ? '-0.0' : '0.0';
  return reprFiniteFloat(x);
}

/**
 * The text of one turn's reward as SPA prints it: the env manager starts the accumulator at
 * the *int* `0` and adds the per-action rewards in order (docs/spa-envs.md#manager,
 * docs/spa-prompts.md#reward-text), so a turn
 * with no executed action prints `0` even for float envs, and any executed action of a float
 * env makes it a float (`-0.2`, `10.9`, `0.0`).
 */
export function turnRewardText(rewards: readonly number[], rewardIsFloat: boolean): string {
  if (rewards.length === 0) return '0';
  // Same left-to-right double additions as Python (0 + r1 + r2 …), so the rounding matches.
  const total = rewards.reduce((acc, reward) => acc + reward, 0);
  return pyRepr(total, rewardIsFloat);
}
