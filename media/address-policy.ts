// Which addresses an outbound fetch may reach (docs/api/media.md,
// "Outbound fetches"; webhooks use the same guard): every address that is not public — private, loopback,
// link-local, CGNAT, cloud metadata, unspecified, multicast, reserved,
// documentation, NAT64 — is refused unless OUTBOUND_ALLOW_HOSTS names it
// (a host name, an IP or a CIDR). IPv4-mapped IPv6 addresses are judged as
// the IPv4 address they carry, so ::ffff:127.0.0.1 is loopback.
import { BlockList, isIP, isIPv4 } from "node:net";

const nonPublicV4 = [
  ["0.0.0.0", 8], // "this network", incl. the unspecified address
  ["10.0.0.0", 8],
  ["100.64.0.0", 10], // CGNAT
  ["127.0.0.0", 8],
  ["169.254.0.0", 16], // link-local, incl. the 169.254.169.254 metadata service
  ["172.16.0.0", 12],
  ["192.0.0.0", 24],
  ["192.0.2.0", 24],
  ["192.88.99.0", 24],
  ["192.168.0.0", 16],
  ["198.18.0.0", 15],
  ["198.51.100.0", 24],
  ["203.0.113.0", 24],
  ["224.0.0.0", 4], // multicast
  ["240.0.0.0", 4], // reserved, incl. broadcast
] as const;

const nonPublicV6 = [
  ["::", 128], // unspecified
  ["::1", 128],
  ["64:ff9b::", 96], // NAT64: may translate to an internal IPv4
  ["64:ff9b:1::", 48],
  ["100::", 64], // discard
  ["2001::", 23], // IETF protocol assignments (Teredo, ORCHID…)
  ["2001:db8::", 32], // documentation
  ["2002::", 16], // 6to4: embeds an arbitrary IPv4
  ["fc00::", 7], // unique local, incl. fd00:ec2::254 (AWS metadata over IPv6)
  ["fe80::", 10], // link-local
  ["fec0::", 10], // old site-local
  ["ff00::", 8], // multicast
] as const;

const blocked = new BlockList();
for (const [net, bits] of nonPublicV4) blocked.addSubnet(net, bits, "ipv4");
for (const [net, bits] of nonPublicV6) blocked.addSubnet(net, bits, "ipv6");

/** The eight 16-bit groups of an IPv6 address (a dotted IPv4 tail included), or undefined. */
function ipv6Groups(address: string): number[] | undefined {
  if (isIP(address) !== 6) return undefined;
  let text = address.toLowerCase();
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (dotted) {
    const [a, b, c, d] = dotted[1]!.split(".").map(Number) as [number, number, number, number];
    text = text.slice(0, -dotted[1]!.length) + `${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, tail] = text.includes("::") ? (text.split("::") as [string, string]) : [text, undefined];
  const h = head ? head.split(":") : [];
  const tl = tail === undefined ? [] : tail ? tail.split(":") : [];
  const fill = tail === undefined ? [] : Array<string>(8 - h.length - tl.length).fill("0");
  const groups = [...h, ...fill, ...tl].map((g) => parseInt(g, 16));
  return groups.length === 8 ? groups : undefined;
}

/** The IPv4 inside an IPv4-mapped (::ffff:a.b.c.d) or IPv4-compatible (::a.b.c.d) IPv6 address. */
export function embeddedIPv4(address: string): string | undefined {
  const g = ipv6Groups(address);
  if (!g || g.slice(0, 5).some((x) => x !== 0)) return undefined;
  const mapped = g[5] === 0xffff;
  const compatible = g[5] === 0 && (g[6] !== 0 || g[7]! > 1); // not :: or ::1
  if (!mapped && !compatible) return undefined;
  return `${g[6]! >> 8}.${g[6]! & 255}.${g[7]! >> 8}.${g[7]! & 255}`;
}

/** An address as the checks see it: mapped IPv6 becomes its IPv4. */
export function normalizeAddress(address: string): { address: string; family: 4 | 6 } {
  const bare = address.startsWith("[") && address.endsWith("]") ? address.slice(1, -1) : address;
  if (isIPv4(bare)) return { address: bare, family: 4 };
  const v4 = embeddedIPv4(bare);
  if (v4) return { address: v4, family: 4 };
  return { address: bare, family: 6 };
}

/**
 * Answers by address text, remembered: BlockList.check builds a SocketAddress
 * per call (~10 µs; a webhook POST asked three times, ~7 % of its CPU), and
 * the answer for an address never changes (the lists are fixed once built).
 */
class Verdicts {
  private readonly known = new Map<string, boolean>();
  private readonly decide: (address: string) => boolean;

  constructor(decide: (address: string) => boolean) {
    this.decide = decide;
  }

  of(address: string): boolean {
    let verdict = this.known.get(address);
    if (verdict === undefined) {
      verdict = this.decide(address);
      if (this.known.size >= maxRemembered) this.known.clear(); // bounded; the next ones are decided again
      this.known.set(address, verdict);
    }
    return verdict;
  }
}

/** Addresses whose verdict is remembered per list. */
const maxRemembered = 4096;

const nonPublic = new Verdicts((address) => {
  const n = normalizeAddress(address);
  if (isIP(n.address) === 0) return true;
  return blocked.check(n.address, n.family === 4 ? "ipv4" : "ipv6");
});

/** True for addresses that are not on the public internet. */
export function isNonPublic(address: string): boolean {
  return nonPublic.of(address);
}

/** OUTBOUND_ALLOW_HOSTS, compiled: names matched exactly (case-insensitive), IPs and CIDRs by address. */
export class AllowList {
  private readonly names = new Set<string>();
  private readonly addresses = new BlockList();
  private empty = true;

  constructor(entries: readonly string[]) {
    for (const raw of entries) {
      const entry = raw.trim().toLowerCase();
      if (!entry) continue;
      this.empty = false;
      const slash = entry.indexOf("/");
      if (slash > 0) {
        const net = normalizeAddress(entry.slice(0, slash));
        const bits = Number(entry.slice(slash + 1));
        if (isIP(net.address) === 0 || !Number.isInteger(bits)) throw new Error(`OUTBOUND_ALLOW_HOSTS: ${raw} is not a CIDR`);
        this.addresses.addSubnet(net.address, bits, net.family === 4 ? "ipv4" : "ipv6");
        continue;
      }
      const ip = normalizeAddress(entry);
      if (isIP(ip.address) !== 0) this.addresses.addAddress(ip.address, ip.family === 4 ? "ipv4" : "ipv6");
      else this.names.add(entry.replace(/\.$/, ""));
    }
  }

  hasName(host: string): boolean {
    return !this.empty && this.names.has(host.toLowerCase().replace(/\.$/, ""));
  }

  private readonly listed = new Verdicts((address) => {
    const n = normalizeAddress(address);
    return this.addresses.check(n.address, n.family === 4 ? "ipv4" : "ipv6");
  });

  hasAddress(address: string): boolean {
    return !this.empty && this.listed.of(address);
  }
}
