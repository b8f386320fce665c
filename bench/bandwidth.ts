// Memory read bandwidth of this machine, the roofline decode is compared against: svc's kernel
// threads stream a buffer far larger than any cache with the current path's widest loads
// (native/bandwidth.cc), in the pool and chunks a matmul uses. An earlier probe from Node (worker
// threads memcmp-ing buffer halves) read 18–29 GB/s where svc's own decode already read ~32 GB/s,
// so it overstated how close decode was to the roofline.
import { measureNativeReadBandwidth, nativeInfo, setNumThreads } from '../src/kernels/native.js';

export interface Bandwidth {
  gbPerS: number;
  method: string;
}

export async function measureReadBandwidth(threads: number, bytes = 1 << 30, passes = 5): Promise<Bandwidth> {
  const before = nativeInfo().threads;
  setNumThreads(threads);
  try {
    const r = measureNativeReadBandwidth(bytes, passes);
    return {
      gbPerS: r.gbPerS,
      method: `native: ${r.threads} kernel threads streaming ${(r.bytes / 2 ** 30).toFixed(2)} GiB (${r.path} read_sum, huge pages asked for; best of ${r.passes} passes)`,
    };
  } finally {
    setNumThreads(before);
  }
}
