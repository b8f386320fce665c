// What kind of address an IP is, for the image fetcher's guard (fetch.ts): only public unicast
// addresses are fetched unless the operator allows the rest (--allow-private-image-urls). Works
// on literal addresses only (no DNS, no connection); IPv6 forms that carry an IPv4 address
// (mapped, compatible, NAT64's well-known prefix, 6to4) are judged by that IPv4 address.
import { isIPv4, isIPv6 } from 'node:net';

export type AddressClass =
  | 'public'
  | 'loopback'
  | 'private'
  | 'link-local'
  /** Shared address space of carrier-grade NAT (100.64.0.0/10). */
  | 'cgnat'
  | 'unspecified'
  | 'multicast'
  /** Documentation, benchmarking, protocol-assignment, broadcast and other special-purpose ranges. */
  | 'reserved';

/** A range: the first `bits` bits of `prefix`. */
type Range = readonly [prefix: readonly number[], bits: number, cls: AddressClass];

// IANA's IPv4 special-purpose registry, as far as it matters for reaching a host.
const V4_RANGES: readonly Range[] = [
  [[0, 0, 0, 0], 8, 'unspecified'],
  [[10, 0, 0, 0], 8, 'private'],
  [[100, 64, 0, 0], 10, 'cgnat'],
  [[127, 0, 0, 0], 8, 'loopback'],
  [[169, 254, 0, 0], 16, 'link-local'],
  [[172, 16, 0, 0], 12, 'private'],
  [[192, 0, 0, 0], 24, 'reserved'],
  [[192, 0, 2, 0], 24, 'reserved'],
  [[192, 88, 99, 0], 24, 'reserved'],
  [[192, 168, 0, 0], 16, 'private'],
  [[198, 18, 0, 0], 15, 'reserved'],
  [[198, 51, 100, 0], 24, 'reserved'],
  [[203, 0, 113, 0], 24, 'reserved'],
  [[224, 0, 0, 0], 4, 'multicast'],
  [[240, 0, 0, 0], 4, 'reserved'],
];

// IPv6, by bytes. Global unicast is 2000::/3; everything outside it is not public (below), and
// these are the ranges inside it (or more precise ones outside) that need a name.
const V6_RANGES: readonly Range[] = [
  [[0x01, 0x00], 64, 'reserved'], // discard-only 100::/64
  [[0x00, 0x64, 0xff, 0x9b, 0x00, 0x01], 48, 'private'], // local-use NAT64 64:ff9b:1::/48
  [[0x20, 0x01, 0x0d, 0xb8], 32, 'reserved'], // documentation 2001:db8::/32
  [[0x20, 0x01, 0x00], 23, 'reserved'], // IETF protocol assignments 2001::/23 (Teredo, benchmarking, ORCHID…)
  [[0x3f, 0xff], 20, 'reserved'], // documentation 3fff::/20
  [[0xfc], 7, 'private'], // unique local fc00::/7
  [[0xfe, 0x80], 10, 'link-local'],
  [[0xfe, 0xc0], 10, 'private'], // site-local (deprecated)
  [[0xff], 8, 'multicast'],
];

function inRange(bytes: readonly number[], prefix: readonly number[], bits: number): boolean {
  for (let i = 0; i < bits; i++) {
    const byte = i >> 3;
    const mask = 0x80 >> (i & 7);
    if ((bytes[byte]! & mask) !== ((prefix[byte] ?? 0) & mask)) return false;
  }
  return true;
}

function classifyV4(b: readonly number[]): AddressClass {
  if (b.every((x) => x === 255)) return 'reserved'; // limited broadcast
  for (const [prefix, bits, cls] of V4_RANGES) if (inRange(b, prefix, bits)) return cls;
  return 'public';
}

function parseV4(s: string): number[] {
  return s.split('.').map(Number);
}

/** The 16 bytes of an IPv6 address net.isIPv6 accepted (a zone `%eth0` is left out). */
function parseV6(s: string): number[] {
  let text = s.split('%')[0]!;
  const tail: number[] = [];
  // A trailing dotted IPv4 (::ffff:1.2.3.4) is its last 32 bits.
  const dotted = text.match(/^(.*:)(\d+\.\d+\.\d+\.\d+)$/);
  if (dotted) {
    text = `${dotted[1]}0:0`;
    tail.push(...parseV4(dotted[2]!));
  }
  const [head, rest] = text.split('::') as [string, string | undefined];
  const groups = (g: string): number[] => (g === '' ? [] : g.split(':').map((h) => parseInt(h, 16)));
  const left = groups(head);
  const right = rest === undefined ? [] : groups(rest);
  const words = [...left, ...Array<number>(8 - left.length - right.length).fill(0), ...right];
  const bytes = words.flatMap((w) => [w >> 8, w & 0xff]);
  if (tail.length === 4) bytes.splice(12, 4, ...tail);
  return bytes;
}

function classifyV6(b: readonly number[]): AddressClass {
  const zeros = (from: number, to: number): boolean => b.slice(from, to).every((x) => x === 0);
  if (zeros(0, 16)) return 'unspecified';
  if (zeros(0, 15) && b[15] === 1) return 'loopback';
  // IPv4-mapped ::ffff:a.b.c.d and the deprecated IPv4-compatible ::a.b.c.d.
  if (zeros(0, 10) && ((b[10] === 0xff && b[11] === 0xff) || (b[10] === 0 && b[11] === 0))) return classifyV4(b.slice(12));
  // NAT64's well-known prefix 64:ff9b::/96 reaches the IPv4 address in its last 32 bits.
  if (inRange(b, [0x00, 0x64, 0xff, 0x9b], 32) && zeros(4, 12)) return classifyV4(b.slice(12));
  // 6to4 2002:a.b.c.d::/48 is routed to the IPv4 address in bits 16–47.
  if (b[0] === 0x20 && b[1] === 0x02) return classifyV4(b.slice(2, 6));
  for (const [prefix, bits, cls] of V6_RANGES) if (inRange(b, prefix, bits)) return cls;
  return (b[0]! & 0xe0) === 0x20 ? 'public' : 'reserved';
}

/** The class of a literal IPv4 or IPv6 address; null when `ip` is not one. */
export function classifyAddress(ip: string): AddressClass | null {
  if (isIPv4(ip)) return classifyV4(parseV4(ip));
  if (isIPv6(ip)) return classifyV6(parseV6(ip));
  return null;
}
