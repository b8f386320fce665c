// How many KV blocks the pool gets. The budget is the share of device memory svc may claim,
// minus the weights and a runtime reserve; the pool never exceeds what max-num-seqs sequences of
// max-seq-len tokens could use. It must hold at least one max-seq-len sequence: that is what lets
// the scheduler always finish its oldest sequence by preempting the others, so a smaller pool
// is refused at start-up instead of failing requests later.

export interface KvBudgetInput {
  /** Device memory in bytes (the CPU backend: the machine's total memory). */
  memoryBytes: number;
  gpuMemoryUtilization: number;
  weightBytes: number;
  oomGuardMb: number;
  kvBytesPerToken: number;
  blockSize: number;
  maxSeqLen: number;
  maxNumSeqs: number;
}

export interface KvPoolPlan {
  numBlocks: number;
  /** numBlocks × blockSize. */
  poolTokens: number;
  /** Bytes the budget allowed for KV before the cap (may exceed what is used). */
  budgetBytes: number;
  /** Bytes the pool actually takes. */
  poolBytes: number;
  /** Whether the pool is as large as the budget allows ('memory') or as sequences can use ('max-seqs'). */
  limitedBy: 'memory' | 'max-seqs';
}

const MiB = 1024 * 1024;

export function planKvPool(input: KvBudgetInput): KvPoolPlan {
  const { memoryBytes, gpuMemoryUtilization, weightBytes, oomGuardMb, kvBytesPerToken, blockSize, maxSeqLen, maxNumSeqs } = input;
  const bytesPerBlock = kvBytesPerToken * blockSize;
  const budgetBytes = gpuMemoryUtilization * memoryBytes - weightBytes - oomGuardMb * MiB;
  const affordable = Math.max(0, Math.floor(budgetBytes / bytesPerBlock));
  const blocksPerSeq = Math.ceil(maxSeqLen / blockSize);
  const cap = blocksPerSeq * maxNumSeqs;

  if (affordable < blocksPerSeq) {
    const mib = (b: number) => `${(b / MiB).toFixed(0)} MiB`;
    throw new Error(
      `Out of memory at start-up: the KV cache budget is ${mib(budgetBytes)} ` +
        `(--gpu-memory-utilization ${gpuMemoryUtilization} × ${mib(memoryBytes)} memory − ${mib(weightBytes)} weights − ` +
        `--oom-guard-mb ${oomGuardMb}), but one sequence of --max-seq-len ${maxSeqLen} tokens needs ${mib(blocksPerSeq * bytesPerBlock)} of KV cache. ` +
        `Lower --max-seq-len (for example 4096) or --oom-guard-mb, or choose a --gpu-memory-utilization ` +
        `(for example 0.85) that leaves room for weights, KV cache and the reserve.`,
    );
  }
  const numBlocks = Math.min(affordable, cap);
  return {
    numBlocks,
    poolTokens: numBlocks * blockSize,
    budgetBytes,
    poolBytes: numBlocks * bytesPerBlock,
    limitedBy: affordable > cap ? 'max-seqs' : 'memory',
  };
}
