//! What sealc's proxy lets through: pure decisions on host names, ports and
//! addresses, shared by the IR (which checks and normalizes the spec's
//! entries) and the proxy (which checks each request and each DNS answer).
//!
//! Names are compared in their ASCII form after IDNA (UTS 46, which also
//! lowercases), without a trailing dot. An entry `*.example.com` (written
//! `.example.com` in the record, the older spelling) matches every name
//! that ends in `.example.com`, at any depth, and never `example.com`
//! itself. An IP literal is let through only when `hosts` lists it; a name
//! is resolved by sealc and refused when any answer lies in a special range
//! ([`special`]) that `allow_ranges` does not cover.

use std::collections::BTreeSet;
use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Longest host text looked at (before IDNA); a DNS name has at most 253.
const MAX_HOST_TEXT: usize = 1024;

/// A request's host, normalized.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Host {
    /// An ASCII name after IDNA, lowercase, no trailing dot.
    Name(String),
    Ip(IpAddr),
}

impl fmt::Display for Host {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Host::Name(n) => f.write_str(n),
            Host::Ip(IpAddr::V4(a)) => write!(f, "{a}"),
            Host::Ip(IpAddr::V6(a)) => write!(f, "[{a}]"),
        }
    }
}

/// Parse a host as a client sent it (or as `--resolve` names it): a
/// bracketed IPv6 literal, a dotted-quad IPv4 literal, or a name, which goes
/// through IDNA. A name whose last label starts with a digit is refused: it
/// is an IPv4 address in another form (`127.1`, `0x7f.0.0.1`, `2130706433`)
/// to the system's resolver.
pub fn parse_host(raw: &str) -> Result<Host, &'static str> {
    if raw.is_empty() {
        return Err("no host");
    }
    if raw.len() > MAX_HOST_TEXT {
        return Err("the host is too long");
    }
    if let Some(inner) = raw.strip_prefix('[') {
        let inner = inner.strip_suffix(']').ok_or("an unclosed `[`")?;
        return inner
            .parse::<Ipv6Addr>()
            .map(|a| Host::Ip(IpAddr::V6(a)))
            .map_err(|_| "not an IPv6 literal");
    }
    if let Ok(a) = raw.parse::<Ipv4Addr>() {
        return Ok(Host::Ip(IpAddr::V4(a)));
    }
    let name = raw.strip_suffix('.').unwrap_or(raw);
    let ascii = to_ascii(name)
        .ok_or("a name has letters, digits and `-` only (after IDNA), in labels of 1 to 63")?;
    if let Ok(a) = ascii.parse::<Ipv4Addr>() {
        return Ok(Host::Ip(IpAddr::V4(a)));
    }
    if number_like(&ascii) {
        return Err("a number where a name is expected (an IP address in another form)");
    }
    Ok(Host::Name(ascii))
}

/// UTS 46 to ASCII: lowercase, punycode, letters, digits and `-` only, the
/// DNS lengths checked.
fn to_ascii(name: &str) -> Option<String> {
    use idna::uts46::{AsciiDenyList, DnsLength, Hyphens, Uts46};
    if name.is_empty() {
        return None;
    }
    Uts46::new()
        .to_ascii(
            name.as_bytes(),
            AsciiDenyList::STD3,
            Hyphens::Allow,
            DnsLength::Verify,
        )
        .ok()
        .map(|c| c.into_owned())
}

/// The last label starts with a digit: no top-level domain does.
fn number_like(ascii: &str) -> bool {
    ascii
        .rsplit('.')
        .next()
        .and_then(|l| l.bytes().next())
        .is_some_and(|b| b.is_ascii_digit())
}

/// Normalize a spec's `hosts` entry to the form recorded: a name (ASCII
/// after IDNA), `.suffix` for `*.suffix` or `.suffix`, `a.b.c.d`, or
/// `[v6]`. The error says what is wrong.
pub fn canonical_entry(raw: &str) -> Result<String, String> {
    let (below, body) = match raw.strip_prefix("*.").or_else(|| raw.strip_prefix('.')) {
        Some(rest) => (true, rest),
        None => (false, raw),
    };
    let host = parse_host(body).map_err(str::to_string)?;
    match (&host, below) {
        (Host::Ip(_), true) => Err("an IP literal has no subdomains".into()),
        (Host::Name(n), _) if !ldh(n) => Err("a label starts or ends with `-`, or is empty".into()),
        (Host::Name(n), true) => Ok(format!(".{n}")),
        _ => Ok(host.to_string()),
    }
}

/// Letters, digits and inner `-`, labels of 1 to 63.
fn ldh(name: &str) -> bool {
    name.split('.').all(|label| {
        !label.is_empty()
            && label.len() <= 63
            && label
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-')
            && !label.starts_with('-')
            && !label.ends_with('-')
    })
}

/// An address range, `addr/prefix`, with no bit set past the prefix.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Cidr {
    pub addr: IpAddr,
    pub prefix: u8,
}

impl fmt::Display for Cidr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.addr, self.prefix)
    }
}

impl Cidr {
    /// Parse `10.0.0.0/8` or `fd00::/8`. The error says what is wrong.
    pub fn parse(s: &str) -> Result<Cidr, String> {
        let (a, p) = s
            .split_once('/')
            .ok_or_else(|| "no `/prefix`".to_string())?;
        let addr: IpAddr = a
            .parse()
            .map_err(|_| format!("`{a}` is not an IP address"))?;
        let max = if addr.is_ipv4() { 32 } else { 128 };
        let prefix: u8 = p
            .parse()
            .ok()
            .filter(|n| *n <= max && p.bytes().all(|b| b.is_ascii_digit()))
            .ok_or_else(|| format!("`/{p}` is not a prefix length from 0 to {max}"))?;
        let c = Cidr { addr, prefix };
        let net = c.network();
        if net != addr {
            return Err(format!(
                "bits are set past the prefix; the range is `{}`",
                Cidr { addr: net, prefix }
            ));
        }
        Ok(c)
    }

    fn network(&self) -> IpAddr {
        match self.addr {
            IpAddr::V4(a) => {
                let m = u32::MAX
                    .checked_shl(32 - u32::from(self.prefix))
                    .unwrap_or(0);
                IpAddr::V4(Ipv4Addr::from(u32::from(a) & m))
            }
            IpAddr::V6(a) => {
                let m = u128::MAX
                    .checked_shl(128 - u32::from(self.prefix))
                    .unwrap_or(0);
                IpAddr::V6(Ipv6Addr::from(u128::from(a) & m))
            }
        }
    }

    pub fn contains(&self, ip: IpAddr) -> bool {
        match (self.addr, ip.to_canonical()) {
            (IpAddr::V4(_), IpAddr::V4(_)) | (IpAddr::V6(_), IpAddr::V6(_)) => {
                Cidr {
                    addr: ip.to_canonical(),
                    prefix: self.prefix,
                }
                .network()
                    == self.addr
            }
            _ => false,
        }
    }
}

/// The special range `ip` lies in, by name; `None` for a global address.
/// An IPv4-mapped IPv6 address is judged as the IPv4 address it maps, and
/// any IPv6 address outside global unicast (`2000::/3`) is special.
pub fn special(ip: IpAddr) -> Option<&'static str> {
    match ip.to_canonical() {
        IpAddr::V4(a) => special_v4(a),
        IpAddr::V6(a) => special_v6(a),
    }
}

fn special_v4(a: Ipv4Addr) -> Option<&'static str> {
    let o = a.octets();
    Some(match o {
        [0, ..] => "unspecified",
        [10, ..] | [192, 168, ..] => "private",
        [172, b, ..] if b & 0xf0 == 16 => "private",
        [100, b, ..] if b & 0xc0 == 64 => "shared (CGNAT)",
        [127, ..] => "loopback",
        [169, 254, ..] => "link-local",
        [192, 0, 2, _] | [198, 51, 100, _] | [203, 0, 113, _] => "documentation",
        [192, 0, 0, _] | [192, 88, 99, _] => "reserved",
        [198, b, ..] if b & 0xfe == 18 => "reserved (benchmarking)",
        [224..=239, ..] => "multicast",
        [240..=255, ..] => "reserved",
        _ => return None,
    })
}

fn special_v6(a: Ipv6Addr) -> Option<&'static str> {
    let s = a.segments();
    if a.is_unspecified() {
        return Some("unspecified");
    }
    if a.is_loopback() {
        return Some("loopback");
    }
    // NAT64 (64:ff9b::/96) reaches the IPv4 address it embeds.
    if s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        let [a, b, c, d] = [s[6] >> 8, s[6] & 0xff, s[7] >> 8, s[7] & 0xff].map(|x| x as u8);
        return special_v4(Ipv4Addr::new(a, b, c, d));
    }
    Some(match s[0] {
        x if x & 0xff00 == 0xff00 => "multicast",
        x if x & 0xffc0 == 0xfe80 => "link-local",
        x if x & 0xfe00 == 0xfc00 => "private",
        x if x & 0xffc0 == 0xfec0 => "private",
        0x2001 if s[1] == 0x0db8 => "documentation",
        x if x & 0xfff0 == 0x3ff0 => "documentation",
        0x2001 if s[1] < 0x0200 => "reserved",
        0x2002 => "reserved",
        x if x & 0xe000 == 0x2000 => return None,
        _ => "reserved",
    })
}

/// Why a request or an answer is refused: a one-line reason.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal(pub String);

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The allowlist, from the IR's canonical entries.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Policy {
    exact: BTreeSet<String>,
    below: BTreeSet<String>,
    ips: BTreeSet<IpAddr>,
    pub ports: BTreeSet<u16>,
    pub allow_ranges: Vec<Cidr>,
}

impl Policy {
    /// From the recorded `hosts` (canonical, see [`canonical_entry`]),
    /// `ports` and `allow_ranges`. An entry that does not parse allows
    /// nothing.
    pub fn new<'a>(
        hosts: impl IntoIterator<Item = &'a String>,
        ports: impl IntoIterator<Item = u16>,
        allow_ranges: impl IntoIterator<Item = Cidr>,
    ) -> Policy {
        let mut p = Policy {
            ports: ports.into_iter().collect(),
            allow_ranges: allow_ranges.into_iter().collect(),
            ..Policy::default()
        };
        for h in hosts {
            if let Some(suffix) = h.strip_prefix('.') {
                p.below.insert(suffix.to_string());
                continue;
            }
            match parse_host(h) {
                Ok(Host::Ip(ip)) => {
                    p.ips.insert(ip);
                }
                Ok(Host::Name(n)) => {
                    p.exact.insert(n);
                }
                Err(_) => {}
            }
        }
        p
    }

    /// What it lets through, as `--dry-run` shows it: names matched exactly,
    /// `*.` suffix entries, IP literals, ports, and the special ranges a
    /// name's answers may lie in.
    pub fn describe(&self) -> serde_json::Value {
        serde_json::json!({
            "hosts": self.exact,
            "suffixes": self.below.iter().map(|s| format!("*.{s}")).collect::<Vec<_>>(),
            "ip_literals": self.ips.iter().map(|ip| Host::Ip(*ip).to_string()).collect::<Vec<_>>(),
            "ports": self.ports,
            "allow_ranges": self.allow_ranges.iter().map(|r| r.to_string()).collect::<Vec<_>>(),
        })
    }

    /// May a client ask for `host:port`?
    pub fn check_target(&self, host: &Host, port: u16) -> Result<(), Refusal> {
        let listed = match host {
            Host::Ip(ip) => self.ips.contains(ip),
            Host::Name(n) => {
                self.exact.contains(n)
                    || self.below.iter().any(|s| {
                        n.len() > s.len() + 1
                            && n.ends_with(s.as_str())
                            && n.as_bytes()[n.len() - s.len() - 1] == b'.'
                    })
            }
        };
        if !listed {
            return Err(Refusal(match host {
                Host::Ip(_) => {
                    format!("{host} is an IP literal that `network.hosts` does not list")
                }
                Host::Name(_) => format!("{host} is not in `network.hosts`"),
            }));
        }
        if !self.ports.contains(&port) {
            return Err(Refusal(format!("port {port} is not in `network.ports`")));
        }
        Ok(())
    }

    /// May a listed name's DNS answer `ip` be connected to? (A listed IP
    /// literal is its own consent and is not asked.)
    pub fn check_answer(&self, host: &Host, ip: IpAddr) -> Result<(), Refusal> {
        match special(ip) {
            Some(kind) if !self.allow_ranges.iter().any(|r| r.contains(ip)) => {
                Err(Refusal(format!(
                    "{host} resolves to {ip}, a {kind} address that `network.allow_ranges` does not cover"
                )))
            }
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn hosts_are_normalized_after_idna() {
        assert_eq!(
            parse_host("API.OpenAI.com"),
            Ok(Host::Name("api.openai.com".into()))
        );
        assert_eq!(
            parse_host("example.com."),
            Ok(Host::Name("example.com".into()))
        );
        assert_eq!(
            parse_host("Bücher.example"),
            Ok(Host::Name("xn--bcher-kva.example".into()))
        );
        assert_eq!(
            parse_host("xn--bcher-kva.example"),
            Ok(Host::Name("xn--bcher-kva.example".into()))
        );
        // Fullwidth digits are digits after IDNA: an IP literal.
        assert_eq!(parse_host("１２７.０.０.１"), Ok(Host::Ip(ip("127.0.0.1"))));
        assert_eq!(parse_host("[::1]"), Ok(Host::Ip(ip("::1"))));
        assert_eq!(parse_host("10.0.0.1"), Ok(Host::Ip(ip("10.0.0.1"))));
        for bad in [
            "",
            "[::1",
            "[fe80::1%eth0]",
            "a b",
            "a_b.com",
            "a..b",
            "127.1",
            "0x7f.0.0.1",
            "2130706433",
            "010.0.0.1",
            "x.0x10",
            "user@host",
            "host:80",
            ".",
            "a/b",
        ] {
            assert!(parse_host(bad).is_err(), "{bad:?} parsed");
        }
        assert!(parse_host(&"a".repeat(2000)).is_err());
        assert!(parse_host(&format!("{}.com", "a".repeat(64))).is_err());
    }

    #[test]
    fn spec_entries_have_one_form() {
        assert_eq!(canonical_entry("*.Example.com").unwrap(), ".example.com");
        assert_eq!(canonical_entry(".example.com").unwrap(), ".example.com");
        assert_eq!(canonical_entry("münchen.de").unwrap(), "xn--mnchen-3ya.de");
        assert_eq!(canonical_entry("[2001:DB8::7]").unwrap(), "[2001:db8::7]");
        assert_eq!(canonical_entry("192.0.2.7").unwrap(), "192.0.2.7");
        for bad in [
            "*.10.0.0.1",
            "-a.com",
            "a-.com",
            "*.",
            "**.a.com",
            "a.*.com",
            "1.2.3",
        ] {
            assert!(canonical_entry(bad).is_err(), "{bad:?} accepted");
        }
    }

    fn policy() -> Policy {
        let hosts: Vec<String> = [
            "api.example.com",
            ".cdn.example.com",
            "192.0.2.7",
            "[2001:db8::7]",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        Policy::new(&hosts, [443], [Cidr::parse("127.0.0.0/8").unwrap()])
    }

    #[test]
    fn targets_match_exactly_or_below_a_suffix() {
        let p = policy();
        let ok = |h: &str, port| p.check_target(&parse_host(h).unwrap(), port).is_ok();
        assert!(ok("api.example.com", 443));
        assert!(ok("API.EXAMPLE.COM.", 443));
        assert!(!ok("api.example.com", 80), "another port");
        assert!(!ok("example.com", 443));
        assert!(!ok("xapi.example.com", 443));
        assert!(
            !ok("a.api.example.com", 443),
            "an exact entry has no subdomains"
        );
        assert!(ok("a.cdn.example.com", 443));
        assert!(ok("a.b.cdn.example.com", 443));
        assert!(
            !ok("cdn.example.com", 443),
            "a suffix entry is not its apex"
        );
        assert!(!ok("xcdn.example.com", 443));
        assert!(ok("192.0.2.7", 443), "a listed literal");
        assert!(ok("[2001:db8::7]", 443));
        assert!(!ok("192.0.2.8", 443), "an unlisted literal");
        assert!(
            !ok("[::ffff:192.0.2.7]", 443),
            "another spelling is another literal"
        );
        let e = p
            .check_target(&parse_host("evil.test").unwrap(), 443)
            .unwrap_err();
        assert_eq!(e.0, "evil.test is not in `network.hosts`");
    }

    #[test]
    fn special_ranges_are_refused_unless_allowed() {
        for (a, kind) in [
            ("0.0.0.0", "unspecified"),
            ("10.1.2.3", "private"),
            ("172.16.0.1", "private"),
            ("172.31.255.255", "private"),
            ("192.168.1.1", "private"),
            ("100.64.0.1", "shared (CGNAT)"),
            ("100.127.255.255", "shared (CGNAT)"),
            ("127.0.0.1", "loopback"),
            ("169.254.169.254", "link-local"),
            ("192.0.2.1", "documentation"),
            ("198.51.100.1", "documentation"),
            ("203.0.113.1", "documentation"),
            ("224.0.0.1", "multicast"),
            ("255.255.255.255", "reserved"),
            ("198.18.0.1", "reserved (benchmarking)"),
            ("::", "unspecified"),
            ("::1", "loopback"),
            ("::ffff:10.0.0.1", "private"),
            ("::ffff:127.0.0.1", "loopback"),
            ("64:ff9b::a00:1", "private"),
            ("fd00::1", "private"),
            ("fe80::1", "link-local"),
            ("ff02::1", "multicast"),
            ("2001:db8::1", "documentation"),
            ("3fff::1", "documentation"),
            ("2001::1", "reserved"),
            ("2002::1", "reserved"),
            ("::10.0.0.1", "reserved"),
            ("100::1", "reserved"),
        ] {
            assert_eq!(special(ip(a)), Some(kind), "{a}");
        }
        for a in [
            "8.8.8.8",
            "1.1.1.1",
            "172.32.0.1",
            "100.128.0.1",
            "2606:4700::1111",
            "::ffff:8.8.8.8",
            "64:ff9b::808:808",
        ] {
            assert_eq!(special(ip(a)), None, "{a}");
        }
        let p = policy();
        let h = Host::Name("api.example.com".into());
        assert!(p.check_answer(&h, ip("127.0.0.1")).is_ok(), "allowed range");
        assert!(
            p.check_answer(&h, ip("::ffff:127.0.0.9")).is_ok(),
            "mapped, allowed"
        );
        assert!(p.check_answer(&h, ip("8.8.8.8")).is_ok());
        let e = p.check_answer(&h, ip("10.0.0.1")).unwrap_err();
        assert!(e.0.contains("10.0.0.1, a private address"), "{e}");
        assert!(
            p.check_answer(&h, ip("::1")).is_err(),
            "v6 loopback is not 127/8"
        );
    }

    #[test]
    fn ranges_parse_strictly() {
        assert_eq!(Cidr::parse("10.0.0.0/8").unwrap().to_string(), "10.0.0.0/8");
        assert_eq!(Cidr::parse("fd00::/8").unwrap().to_string(), "fd00::/8");
        assert!(Cidr::parse("10.0.0.1/8")
            .unwrap_err()
            .contains("`10.0.0.0/8`"));
        for bad in [
            "10.0.0.0",
            "10.0.0.0/33",
            "::/129",
            "x/8",
            "10.0.0.0/+8",
            "10.0.0.0/",
        ] {
            assert!(Cidr::parse(bad).is_err(), "{bad}");
        }
        let all = Cidr::parse("0.0.0.0/0").unwrap();
        assert!(all.contains(ip("10.0.0.1")) && !all.contains(ip("::1")));
        let one = Cidr::parse("127.0.0.1/32").unwrap();
        assert!(one.contains(ip("127.0.0.1")) && !one.contains(ip("127.0.0.2")));
    }
}
