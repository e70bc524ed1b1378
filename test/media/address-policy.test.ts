// The outbound guard's address rules: every non-public IPv4 and IPv6 range,
// IPv4-mapped and -compatible IPv6 judged as IPv4, and the allow list's
// names, IPs and CIDRs.
import t from "tap";
import { AllowList, embeddedIPv4, isNonPublic, normalizeAddress } from "../../media/address-policy.ts";

t.test("non-public IPv4", async (t) => {
  for (const a of ["0.0.0.0", "10.1.2.3", "100.64.0.1", "100.127.255.254", "127.0.0.1", "127.255.0.9", "169.254.169.254", "172.16.0.1", "172.31.255.255", "192.168.1.1", "192.0.2.5", "198.18.0.1", "224.0.0.1", "239.255.255.250", "255.255.255.255", "240.0.0.1"]) {
    t.ok(isNonPublic(a), `${a} refused`);
  }
  for (const a of ["8.8.8.8", "1.1.1.1", "93.184.216.34", "172.32.0.1", "100.128.0.1", "11.0.0.1", "192.169.0.1"]) {
    t.notOk(isNonPublic(a), `${a} public`);
  }
});

t.test("non-public IPv6, mapped and compatible forms", async (t) => {
  for (const a of ["::", "::1", "fd00:ec2::254", "fc00::1", "fe80::1", "ff02::1", "::ffff:127.0.0.1", "::ffff:7f00:1", "0:0:0:0:0:ffff:a9fe:a9fe", "::ffff:10.0.0.1", "::127.0.0.1", "64:ff9b::7f00:1", "2001:db8::1", "2002:7f00:1::", "[::1]"]) {
    t.ok(isNonPublic(a), `${a} refused`);
  }
  for (const a of ["2606:4700:4700::1111", "2001:4860:4860::8888", "::ffff:8.8.8.8"]) {
    t.notOk(isNonPublic(a), `${a} public`);
  }
  t.ok(isNonPublic("not-an-ip"), "anything unparsable is refused");
  t.equal(embeddedIPv4("::ffff:a9fe:a9fe"), "169.254.169.254");
  t.equal(embeddedIPv4("::1"), undefined);
  t.equal(embeddedIPv4("2001:db8::1"), undefined);
  t.same(normalizeAddress("::ffff:127.0.0.1"), { address: "127.0.0.1", family: 4 });
  t.same(normalizeAddress("[fe80::1]"), { address: "fe80::1", family: 6 });
});

t.test("allow list: names, IPs, CIDRs", async (t) => {
  const allow = new AllowList(["localhost", "127.0.0.1", "10.0.0.0/8", "fd00::/8", "Fake.Test."]);
  t.ok(allow.hasName("LOCALHOST"));
  t.ok(allow.hasName("fake.test"));
  t.notOk(allow.hasName("other.test"));
  t.ok(allow.hasAddress("127.0.0.1"));
  t.ok(allow.hasAddress("::ffff:127.0.0.1"), "mapped form of an allowed IPv4");
  t.notOk(allow.hasAddress("127.0.0.2"));
  t.ok(allow.hasAddress("10.200.3.4"));
  t.ok(allow.hasAddress("fd00:ec2::254"));
  t.notOk(allow.hasAddress("169.254.169.254"));
  const empty = new AllowList([]);
  t.notOk(empty.hasName("localhost"));
  t.notOk(empty.hasAddress("127.0.0.1"));
  t.throws(() => new AllowList(["10.0.0.0/x"]), /not a CIDR/);
});

t.test("remembered verdicts: the same answer on every ask, each allow list its own", async (t) => {
  const mixed = ["127.0.0.1", "8.8.8.8", "::ffff:10.0.0.1", "2606:4700:4700::1111", "169.254.169.254", "1.1.1.1"];
  const first = mixed.map(isNonPublic);
  t.same(first, [true, false, true, false, true, false]);
  for (let ask = 0; ask < 3; ask++) t.same(mixed.map(isNonPublic), first, `ask ${ask + 2} answers as the first`);
  const loopback = new AllowList(["127.0.0.0/8"]);
  const metadata = new AllowList(["169.254.169.254"]);
  for (let ask = 0; ask < 3; ask++) {
    t.same(mixed.map((a) => loopback.hasAddress(a)), [true, false, false, false, false, false], `ask ${ask + 1}: the loopback list`);
    t.same(mixed.map((a) => metadata.hasAddress(a)), [false, false, false, false, true, false], `ask ${ask + 1}: the metadata list`);
  }
  // Past the bound the remembered answers are dropped, never wrong.
  for (let i = 0; i < 5000; i++) isNonPublic(`10.${(i >> 8) & 255}.${i & 255}.1`);
  t.same(mixed.map(isNonPublic), first, "after many other addresses");
});
