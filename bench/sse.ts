// Server-sent events as both benchmarked servers stream them: the data of every event, in order.

/** Calls onData with each `data:` line's payload of the SSE stream in `body`, as the events arrive. */
export async function forEachSseData(body: AsyncIterable<Uint8Array>, onData: (data: string) => void): Promise<void> {
  const decoder = new TextDecoder();
  let pending = '';
  for await (const chunk of body) {
    pending += decoder.decode(chunk, { stream: true });
    let cut: number;
    while ((cut = pending.indexOf('\n\n')) >= 0) {
      const event = pending.slice(0, cut);
      pending = pending.slice(cut + 2);
      for (const line of event.split('\n')) if (line.startsWith('data:')) onData(line.slice(5).trim());
    }
  }
}
