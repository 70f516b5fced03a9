/** The webhook address guard and secret binding, pure: every spelling of an address read into its bytes, judged, and secrets bound to origins. */
import { describe, expect, it } from "@jest/globals";
import { createWebhookActivity, webhookSecretFor, type WebhookOptions } from "../../src/worker/webhooks/deliver.js";
import { isPrivateAddress, parseIp } from "../../src/node/addresses.js";
import { checkWebhookUrl } from "../../src/worker/webhooks/target.js";

const LOOPBACK4 = [127, 0, 0, 1];
const MAPPED = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 255, 255, 127, 0, 0, 1];

describe("IP normaliser", () => {
  it("reads every IPv4 spelling into its four bytes", () => {
    for (const form of [
      "127.0.0.1",
      "2130706433",
      "0x7f000001",
      "0x7f.1",
      "0177.0.0.1",
      "127.1",
      "127.0.1",
      "0x7F.0.0.01",
      "127.0.0.1.",
    ])
      expect([form, parseIp(form)]).toEqual([form, LOOPBACK4]);
    expect(parseIp("0")).toEqual([0, 0, 0, 0]);
    expect(parseIp("10.1")).toEqual([10, 0, 0, 1]);
    expect(parseIp("192.168.257")).toEqual([192, 168, 1, 1]);
    for (const bad of ["256.0.0.1", "1.2.3.4.5", "4294967296", "08.0.0.1", "1..2", "example.com", "", "0xg"])
      expect([bad, parseIp(bad)]).toEqual([bad, undefined]);
  });

  it("reads IPv6, brackets, zone ids and IPv4 tails into sixteen bytes", () => {
    for (const form of [
      "::ffff:127.0.0.1",
      "::ffff:7f00:1",
      "[::ffff:7f00:1]",
      "0:0:0:0:0:ffff:7f00:1",
      "::FFFF:127.1",
    ])
      expect([form, parseIp(form)]).toEqual([form, MAPPED]);
    expect(parseIp("::")).toEqual(Array(16).fill(0));
    expect(parseIp("::1")).toEqual([...Array(15).fill(0), 1]);
    expect(parseIp("fe80::1%eth0")).toEqual([0xfe, 0x80, ...Array(13).fill(0), 1]);
    expect(parseIp("1:2:3:4:5:6:7::")).toEqual([0, 1, 0, 2, 0, 3, 0, 4, 0, 5, 0, 6, 0, 7, 0, 0]);
    for (const bad of ["1::2::3", "1:2:3:4:5:6:7:8:9", "::g", "1:2:3:4:5:6:7", ":1::", "::1.2.3.4.5"])
      expect([bad, parseIp(bad)]).toEqual([bad, undefined]);
  });

  it("judges every inside address as private, however it is spelled or embedded", () => {
    const inside = [
      // loopback, every IPv4 spelling
      ...["127.0.0.1", "2130706433", "0x7f000001", "0x7f.1", "0177.0.0.1", "127.1", "127.255.255.254"],
      // IPv4 inside IPv6: mapped, compatible, translated, NAT64, 6to4, Teredo (client inverted)
      ...[
        "::ffff:127.0.0.1",
        "::ffff:7f00:1",
        "::127.0.0.1",
        "::ffff:0:7f00:1",
        "64:ff9b::7f00:1",
        "64:ff9b::a9fe:a9fe",
      ],
      ...["64:ff9b:1::1", "2002:7f00:1::1", "2001:0:4136:e378:8000:63bf:80ff:fffe"],
      // unspecified, this network
      ...["0.0.0.0", "0", "::", "0.1.2.3"],
      // private, CGNAT, link-local and the metadata addresses
      ...["10.0.0.1", "172.16.0.1", "172.31.255.255", "192.168.1.1", "100.64.0.1", "100.127.255.255"],
      ...["169.254.0.1", "169.254.169.254", "fd00:ec2::254", "fe80::1", "febf::1", "fc00::1", "fdff::1"],
      // loopback v6, multicast, broadcast, reserved, documentation, benchmarking
      ...["::1", "ff02::1", "224.0.0.1", "255.255.255.255", "240.0.0.1", "192.0.2.1", "198.18.0.1", "2001:db8::1"],
      // what is not an address at all is not waved through
      ...["example.com", "", "1.2.3.4.5"],
    ];
    for (const ip of inside) expect([ip, isPrivateAddress(ip)]).toEqual([ip, true]);
    const outside = [
      "8.8.8.8",
      "1.1.1.1",
      "172.32.0.1",
      "100.128.0.1",
      "169.255.0.1",
      "2606:4700::1111",
      "::ffff:8.8.8.8",
    ];
    const more = ["64:ff9b::808:808", "2002:808:808::1", "2a00::1"];
    for (const ip of [...outside, ...more]) expect([ip, isPrivateAddress(ip)]).toEqual([ip, false]);
  });

  it("checks URLs by the address they name or resolve to, all of them", async () => {
    const inside = [
      "http://[::ffff:127.0.0.1]/",
      "http://[::ffff:7f00:1]/",
      "http://2130706433/",
      "http://0x7f.1/",
      "http://0177.0.0.1/",
      "http://127.1/",
      "http://[64:ff9b::7f00:1]/",
      "http://0.0.0.0/",
      "http://[::]/",
      "http://[fd00:ec2::254]/",
      "http://169.254.169.254/latest/meta-data/",
      "http://localhost/",
      "http://LOCALHOST./",
      "http://api.localhost/",
    ];
    const never = async (): Promise<never> => {
      throw new Error("must not be resolved");
    };
    for (const u of inside)
      expect([u, await checkWebhookUrl(u, false, never)]).toEqual([u, expect.stringMatching(/private or loopback/)]);
    // A name is judged by every address it resolves to.
    const mixed = async () => [
      { address: "8.8.8.8", family: 4 },
      { address: "::ffff:10.0.0.1", family: 6 },
    ];
    expect(await checkWebhookUrl("https://hooks.example.com/x", false, mixed)).toMatch(/::ffff:10\.0\.0\.1/);
    const outside = async () => [{ address: "93.184.215.14", family: 4 }];
    expect(await checkWebhookUrl("https://hooks.example.com/x", false, outside)).toBeUndefined();
    // The operator's opt-in still lets private targets through.
    expect(await checkWebhookUrl("http://[::ffff:127.0.0.1]:9/x", true, never)).toBeUndefined();
    expect(await checkWebhookUrl("file:///etc/passwd", true)).toMatch(/http or https/);
  });
});

describe("webhook secrets are bound to origins by the worker's config", () => {
  const options: WebhookOptions = {
    secrets: {
      ops: { secret: "ops-secret", origins: ["https://Hooks.example.com:443/any/path", "http://10.0.0.5:8080"] },
    },
  };
  const env = {
    JAI_WEBHOOK_SECRET_BILLING: "billing-secret",
    JAI_WEBHOOK_SECRET_CI_HOOK: "ci-secret",
    JAI_WEBHOOK_ORIGINS_CI_HOOK: "https://ci.example.com, https://ci2.example.com",
  };

  it("signs only for a configured origin", () => {
    expect(webhookSecretFor("ops", "https://hooks.example.com/agent", options, env)).toBe("ops-secret");
    expect(webhookSecretFor("ops", "http://10.0.0.5:8080/x", options, env)).toBe("ops-secret");
    expect(webhookSecretFor("ci-hook", "https://ci2.example.com/x", options, env)).toBe("ci-secret");
    for (const [name, url] of [
      ["ops", "https://attacker.example/agent"],
      ["ops", "http://hooks.example.com/agent"], // another scheme is another origin
      ["ops", "https://hooks.example.com:8443/agent"],
      ["ops", "https://hooks.example.com.attacker.example/"],
      ["ops", "https://user@hooks.example.com@attacker.example/"],
      ["billing", "https://hooks.example.com/agent"], // in the environment without origins: signs nothing
      ["ci-hook", "https://attacker.example/"],
      ["unknown", "https://hooks.example.com/agent"],
      ["toString", "https://hooks.example.com/agent"],
      ["__proto__", "https://hooks.example.com/agent"],
    ])
      expect([name, url, webhookSecretFor(name, url, options, env)]).toEqual([name, url, undefined]);
  });

  it("refuses at start a secret bound to nothing or to a non-origin", () => {
    expect(() => createWebhookActivity({ secrets: { ops: "bare" as never } })).toThrow(
      /webhooks\.secrets\.ops must be/,
    );
    expect(() => createWebhookActivity({ secrets: { ops: { secret: "s", origins: [] } } })).toThrow(
      /origins must list/,
    );
    expect(() => createWebhookActivity({ secrets: { ops: { secret: "s", origins: ["not a url"] } } })).toThrow(
      /not a URL origin/,
    );
    expect(() => createWebhookActivity({ secrets: { ops: { secret: "s", origins: ["ftp://x.example"] } } })).toThrow(
      /http or https origin/,
    );
  });
});
