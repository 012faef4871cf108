//! The caller's terminal, out of reach of the command's output.
//!
//! When sealc's own stdout or stderr is a terminal, what the command writes
//! is relayed through a [`Filter`]: a hostile agent's escape sequences
//! would otherwise write the caller's clipboard (OSC 52), change the
//! window title, move the cursor and erase or overwrite the lines sealc
//! printed (and fake `sealc:` lines), or have the terminal answer a query
//! (DSR, DA) into the caller's input.
//!
//! Kept: printable ASCII, valid UTF-8 text (but U+0080–U+009F), `\n`, `\t`,
//! `\r`, and SGR sequences (`ESC [` then only digits, `;` and `:`, then
//! `m`; at most [`MAX_CSI`] bytes): colours and text attributes. Dropped:
//! every other C0 control and DEL; every other escape sequence (`ESC 7`,
//! `ESC M`, `ESC c`, `ESC ( 0`, ...); every other CSI (cursor moves,
//! erases, scroll regions, modes, queries) and any CSI longer than
//! [`MAX_CSI`] bytes, whole; OSC, DCS, SOS, PM and APC strings up to their
//! BEL or ST (`ESC \`), also when they never end; C1 controls both as raw
//! bytes 0x80–0x9F outside a UTF-8 sequence and UTF-8-encoded (`C2 80` to
//! `C2 9F`), with the sequences they start (an 8-bit CSI as `ESC [`, an
//! 8-bit OSC, DCS, SOS, PM or APC as its string); and invalid UTF-8.
//!
//! The filter is pure and streaming: state is kept between [`Filter::feed`]
//! calls, so a sequence split over two reads is seen whole, and it holds at
//! most [`MAX_CSI`] bytes whatever the input (a string is dropped as it
//! streams, never buffered). What it drops is counted.

/// The longest CSI that can pass (an SGR, `ESC` and final byte included);
/// a longer one is dropped whole.
pub const MAX_CSI: usize = 64;

/// What resets the terminal's text attributes: written after a filtered
/// stream whose last SGR left them set, so the agent's colours (or
/// concealed text) do not run into what sealc prints next.
pub const RESET: &[u8] = b"\x1b[0m";

const ESC: u8 = 0x1b;
const BEL: u8 = 0x07;
const CAN: u8 = 0x18;
const SUB: u8 = 0x1a;
const DEL: u8 = 0x7f;

/// Printable ASCII, `\n`, `\t`, `\r`: passes as it is from the ground state.
fn plain(b: u8) -> bool {
    matches!(b, 0x20..=0x7e | b'\n' | b'\t' | b'\r')
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Ground,
    /// Inside a UTF-8 sequence (its first bytes pending): `need` more
    /// continuation bytes, the next one within `lo..=hi`.
    Utf8 {
        need: u8,
        lo: u8,
        hi: u8,
    },
    /// After `ESC` (pending).
    Esc,
    /// After `ESC` and intermediate bytes: dropped up to the final byte.
    EscIntermediate,
    /// `ESC [` and SGR parameter bytes so far (pending).
    Sgr,
    /// A CSI that cannot pass: dropped up to its final byte.
    CsiDrop,
    /// An OSC, DCS, SOS, PM or APC string: dropped up to BEL or ST.
    Str,
    /// `ESC` (pending) inside a string: ST if `\` follows, else the string
    /// ends and a new sequence begins.
    StrEsc,
}

/// The streaming terminal filter; see the module's documentation.
#[derive(Clone, Debug)]
pub struct Filter {
    state: State,
    pending: [u8; MAX_CSI],
    len: usize,
    dropped: u64,
    styled: bool,
}

impl Default for Filter {
    fn default() -> Self {
        Filter::new()
    }
}

/// Whether a byte was consumed, or must be looked at again in the new state.
enum Step {
    Done,
    Again,
}

impl Filter {
    pub fn new() -> Filter {
        Filter {
            state: State::Ground,
            pending: [0; MAX_CSI],
            len: 0,
            dropped: 0,
            styled: false,
        }
    }

    /// Bytes dropped so far (pending ones not counted until they are).
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    /// Did the last SGR that passed leave text attributes set (anything but
    /// `ESC [ m` or `ESC [ 0 m`)? Then [`RESET`] belongs after the stream.
    pub fn styled(&self) -> bool {
        self.styled
    }

    /// Filter `input`, appending what passes to `out`. A sequence or UTF-8
    /// character that `input` ends inside is held for the next call.
    pub fn feed(&mut self, input: &[u8], out: &mut Vec<u8>) {
        out.reserve(input.len() + self.len);
        let mut i = 0;
        while i < input.len() {
            if self.state == State::Ground {
                // A run of plain text at once.
                let run = input[i..]
                    .iter()
                    .position(|&b| !plain(b))
                    .unwrap_or(input.len() - i);
                out.extend_from_slice(&input[i..i + run]);
                i += run;
                if i == input.len() {
                    break;
                }
            }
            while let Step::Again = self.step(input[i], out) {}
            i += 1;
        }
    }

    /// The end of the stream: what is held (an unfinished sequence or
    /// character) is dropped.
    pub fn finish(&mut self) {
        self.drop_pending();
        self.state = State::Ground;
    }

    /// Filter a whole stream at once.
    pub fn all(input: &[u8]) -> (Vec<u8>, u64) {
        let mut f = Filter::new();
        let mut out = Vec::new();
        f.feed(input, &mut out);
        f.finish();
        (out, f.dropped)
    }

    fn drop_pending(&mut self) {
        self.dropped += self.len as u64;
        self.len = 0;
    }

    fn hold(&mut self, b: u8) {
        // Never past the buffer: the states that hold bytes stop short of it.
        if let Some(slot) = self.pending.get_mut(self.len) {
            *slot = b;
            self.len += 1;
        } else {
            self.dropped += 1;
        }
    }

    fn emit_pending(&mut self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.pending[..self.len]);
        self.len = 0;
    }

    /// Drop what is held and `b`, then go to `next`.
    fn drop_all(&mut self, next: State) -> Step {
        self.drop_pending();
        self.dropped += 1;
        self.state = next;
        Step::Done
    }

    /// Drop what is held, and look at `b` again from the ground state.
    fn abort(&mut self) -> Step {
        self.drop_pending();
        self.state = State::Ground;
        Step::Again
    }

    /// A C1 control `c` (its bytes already dropped): the state it starts.
    fn c1(c: u8) -> State {
        match c {
            0x9b => State::CsiDrop,                         // CSI
            0x90 | 0x98 | 0x9d | 0x9e | 0x9f => State::Str, // DCS, SOS, OSC, PM, APC
            _ => State::Ground,
        }
    }

    fn step(&mut self, b: u8, out: &mut Vec<u8>) -> Step {
        match self.state {
            State::Ground => {
                match b {
                    _ if plain(b) => out.push(b),
                    ESC => {
                        self.hold(b);
                        self.state = State::Esc;
                    }
                    0x80..=0x9f => {
                        self.dropped += 1;
                        self.state = Filter::c1(b);
                    }
                    0xc2..=0xf4 => {
                        let (need, lo, hi) = match b {
                            0xc2..=0xdf => (1, 0x80, 0xbf),
                            0xe0 => (2, 0xa0, 0xbf),
                            0xed => (2, 0x80, 0x9f),
                            0xe1..=0xef => (2, 0x80, 0xbf),
                            0xf0 => (3, 0x90, 0xbf),
                            0xf4 => (3, 0x80, 0x8f),
                            _ => (3, 0x80, 0xbf),
                        };
                        self.hold(b);
                        self.state = State::Utf8 { need, lo, hi };
                    }
                    // Other C0 controls, DEL, bytes that never start UTF-8.
                    _ => self.dropped += 1,
                }
                Step::Done
            }
            State::Utf8 { need, lo, hi } => {
                if self.len == 1 && self.pending[0] == 0xc2 && (0x80..=0x9f).contains(&b) {
                    // U+0080–U+009F: a C1 control, UTF-8-encoded.
                    return self.drop_all(Filter::c1(b));
                }
                if !(lo..=hi).contains(&b) {
                    return self.abort();
                }
                self.hold(b);
                if need == 1 {
                    self.emit_pending(out);
                    self.state = State::Ground;
                } else {
                    self.state = State::Utf8 {
                        need: need - 1,
                        lo: 0x80,
                        hi: 0xbf,
                    };
                }
                Step::Done
            }
            State::Esc => match b {
                b'[' => {
                    self.hold(b);
                    self.state = State::Sgr;
                    Step::Done
                }
                b']' | b'P' | b'X' | b'^' | b'_' => self.drop_all(State::Str),
                0x20..=0x2f => self.drop_all(State::EscIntermediate),
                // `ESC ESC`: the first one is dropped, the second starts anew.
                ESC => {
                    self.dropped += 1;
                    Step::Done
                }
                0x30..=0x7e => self.drop_all(State::Ground),
                _ => self.abort(),
            },
            State::EscIntermediate => match b {
                0x20..=0x2f => self.drop_all(State::EscIntermediate),
                0x30..=0x7e => self.drop_all(State::Ground),
                _ => self.abort(),
            },
            State::Sgr => match b {
                b'0'..=b'9' | b';' | b':' if self.len + 1 < MAX_CSI => {
                    self.hold(b);
                    Step::Done
                }
                // Too long, or a private marker, an intermediate, DEL: not
                // an SGR, dropped up to its end.
                0x20..=0x3f | DEL => self.drop_all(State::CsiDrop),
                b'm' => {
                    let params = &self.pending[2..self.len];
                    self.styled = !(params.is_empty() || params == b"0");
                    self.emit_pending(out);
                    out.push(b);
                    self.state = State::Ground;
                    Step::Done
                }
                0x40..=0x7e => self.drop_all(State::Ground),
                _ => self.abort(),
            },
            State::CsiDrop => match b {
                0x20..=0x3f | DEL => self.drop_all(State::CsiDrop),
                0x40..=0x7e => self.drop_all(State::Ground),
                _ => self.abort(),
            },
            State::Str => match b {
                ESC => {
                    self.hold(b);
                    self.state = State::StrEsc;
                    Step::Done
                }
                BEL | CAN | SUB => self.drop_all(State::Ground),
                _ => self.drop_all(State::Str),
            },
            State::StrEsc => {
                if b == b'\\' {
                    return self.drop_all(State::Ground);
                }
                // The string ends here; the `ESC` held begins a new sequence.
                self.state = State::Esc;
                Step::Again
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn f(input: &[u8]) -> Vec<u8> {
        Filter::all(input).0
    }

    #[test]
    fn text_colours_and_layout_pass() {
        let s = "plain text, ünïcödé ✓ 🦀\n\tindented\r100%\n";
        assert_eq!(f(s.as_bytes()), s.as_bytes());
        let sgr = b"\x1b[31mred\x1b[0m \x1b[1;38;5;208mbold\x1b[m \x1b[38:2::1:2:3mtrue\x1b[0m";
        assert_eq!(f(sgr), sgr);
        assert_eq!(Filter::all(sgr).1, 0);
    }

    #[test]
    fn every_other_control_and_sequence_is_dropped() {
        let cases: &[(&[u8], &[u8])] = &[
            // OSC 52 (clipboard), OSC 0 and 2 (title), by BEL and by ST.
            (b"a\x1b]52;c;ZXZpbA==\x07b", b"ab"),
            (b"a\x1b]0;pwned\x1b\\b", b"ab"),
            (b"a\x1b]2;title\x07b", b"ab"),
            // Cursor moves, erases, scroll region, modes, queries.
            (b"a\x1b[Ab\x1b[2Jc\x1b[Hd\x1b[1;1He", b"abcde"),
            (b"a\x1b[6nb\x1b[cc\x1b[>cd\x1b[?25le\x1b[1;5rf", b"abcdef"),
            (b"a\x1b[2Kb\x1b[1Gc", b"abc"),
            // Other escapes: save/restore, index, reverse index, reset, charsets.
            (
                b"a\x1b7b\x1b8c\x1bDd\x1bEe\x1bMf\x1bcg\x1b(0h\x1b)Bi",
                b"abcdefghi",
            ),
            // DCS, SOS, PM, APC.
            (
                b"a\x1bPq#0;1\x1b\\b\x1bXsos\x1b\\c\x1b^pm\x1b\\d\x1b_apc\x1b\\e",
                b"abcde",
            ),
            // C0 controls and DEL.
            (b"a\x07b\x08c\x0bd\x0ce\x0ef\x0fg\x00h\x7fi", b"abcdefghi"),
            // 8-bit C1: CSI, OSC, IND, NEL, RI; UTF-8-encoded too.
            (b"a\x9b2Jb\x9d0;t\x07c\x84d\x85e\x8df", b"abcdef"),
            ("a\u{9b}2Jb\u{9d}52;c;x\u{7}c\u{85}d".as_bytes(), b"abcd"),
            // Not SGR: private marker, intermediate, other final.
            (b"a\x1b[?1mb\x1b[1 mc\x1b[1;2Hd\x1b[>4;2me", b"abcde"),
            // Invalid UTF-8.
            (b"a\xffb\xc0\xafc\xe2(d\xed\xa0\x80e\xf5f", b"abc(def"),
        ];
        for (input, want) in cases {
            let (got, dropped) = Filter::all(input);
            assert_eq!(
                got,
                *want,
                "{:?} gave {:?}",
                String::from_utf8_lossy(input),
                String::from_utf8_lossy(&got)
            );
            assert_eq!(dropped as usize, input.len() - want.len());
        }
    }

    #[test]
    fn a_sequence_split_over_reads_is_seen_whole() {
        let input = b"x\x1b]52;c;AAAA\x07y\x1b[31mz\xe2\x9c\x93\x1b[2J";
        let whole = f(input);
        assert_eq!(whole, b"xy\x1b[31mz\xe2\x9c\x93");
        for cut in 0..input.len() {
            let mut fl = Filter::new();
            let mut out = Vec::new();
            fl.feed(&input[..cut], &mut out);
            fl.feed(&input[cut..], &mut out);
            fl.finish();
            assert_eq!(out, whole, "cut at {cut}");
        }
    }

    #[test]
    fn unterminated_strings_and_long_csis_are_dropped_without_holding_them() {
        let mut fl = Filter::new();
        let mut out = Vec::new();
        fl.feed(b"a\x1b]52;c;", &mut out);
        for _ in 0..10_000 {
            fl.feed(&[b'A'; 1024], &mut out);
            assert!(fl.len <= MAX_CSI);
        }
        fl.feed(b"\x07b", &mut out);
        assert_eq!(out, b"ab");
        // A CSI longer than the bound, SGR or not, is dropped whole.
        let long = format!("a\x1b[{}mb", "1;".repeat(40));
        assert_eq!(f(long.as_bytes()), b"ab");
        let just = format!("\x1b[{}m", "1".repeat(MAX_CSI - 3));
        assert_eq!(f(just.as_bytes()), just.as_bytes());
        let over = format!("\x1b[{}m", "1".repeat(MAX_CSI - 2));
        assert_eq!(f(over.as_bytes()), b"");
    }

    #[test]
    fn an_escape_inside_a_string_ends_it() {
        // ST ends it; any other ESC starts a new sequence.
        assert_eq!(f(b"\x1b]0;t\x1b[31mred"), b"\x1b[31mred");
        assert_eq!(f(b"\x1b]0;t\x1b\x1b]0;u\x07v"), b"v");
        // CAN and SUB cancel it.
        assert_eq!(f(b"\x1b]0;t\x18after"), b"after");
    }

    #[test]
    fn the_end_of_the_stream_drops_what_is_held() {
        for tail in [&b"\x1b"[..], b"\x1b[31", b"\xe2\x9c", b"\x1b]0;t", b"\xc2"] {
            let mut input = b"ok".to_vec();
            input.extend_from_slice(tail);
            let (out, dropped) = Filter::all(&input);
            assert_eq!(out, b"ok");
            assert_eq!(dropped as usize, tail.len());
        }
    }

    #[test]
    fn styled_says_whether_attributes_were_left_set() {
        let mut fl = Filter::new();
        let mut out = Vec::new();
        fl.feed(b"\x1b[8m", &mut out);
        assert!(fl.styled());
        fl.feed(b"\x1b[0m", &mut out);
        assert!(!fl.styled());
        fl.feed(b"\x1b[31m\x1b[m", &mut out);
        assert!(!fl.styled());
    }

    /// Bytes a hostile stream is made of: pieces of sequences more than
    /// random bytes.
    fn hostile() -> impl Strategy<Value = Vec<u8>> {
        let piece = prop_oneof![
            any::<u8>().prop_map(|b| vec![b]),
            Just(b"\x1b".to_vec()),
            Just(b"\x1b[".to_vec()),
            Just(b"\x1b]".to_vec()),
            Just(b"\x1bP".to_vec()),
            Just(b"\x1b\\".to_vec()),
            Just(b"\x07".to_vec()),
            Just(b"\x9b".to_vec()),
            Just(b"\x9d".to_vec()),
            Just(b"\xc2".to_vec()),
            Just("\u{9b}".as_bytes().to_vec()),
            Just("é✓🦀".as_bytes().to_vec()),
            Just(b"31;1m".to_vec()),
            Just(b"m".to_vec()),
            Just(b"?25l".to_vec()),
            Just(b"text ".to_vec()),
            proptest::collection::vec(b'0'..=b';', 0..80),
        ];
        proptest::collection::vec(piece, 0..60).prop_map(|v| v.concat())
    }

    fn is_subsequence(small: &[u8], big: &[u8]) -> bool {
        let mut it = big.iter();
        small.iter().all(|b| it.any(|c| c == b))
    }

    /// Every ESC of `out` starts an SGR that passes: `ESC [`, params of
    /// digits, `;` and `:`, then `m`.
    fn escapes_are_sgr_only(out: &[u8]) -> bool {
        let mut i = 0;
        while i < out.len() {
            if out[i] == ESC {
                if out.get(i + 1) != Some(&b'[') {
                    return false;
                }
                let mut j = i + 2;
                while j < out.len() && matches!(out[j], b'0'..=b'9' | b';' | b':') {
                    j += 1;
                }
                if out.get(j) != Some(&b'm') || j + 1 - i > MAX_CSI {
                    return false;
                }
                i = j;
            }
            i += 1;
        }
        true
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

        #[test]
        fn the_filter_holds_on_any_input(
            input in prop_oneof![hostile(), proptest::collection::vec(any::<u8>(), 0..400)],
            cuts in proptest::collection::vec(any::<prop::sample::Index>(), 0..8),
        ) {
            let (out, dropped) = Filter::all(&input);
            // Nothing added, nothing lost uncounted.
            prop_assert!(is_subsequence(&out, &input));
            prop_assert_eq!(out.len() as u64 + dropped, input.len() as u64);
            // No ESC but an SGR's, no C0 but `\n`, `\t`, `\r`, no DEL, no C1.
            prop_assert!(escapes_are_sgr_only(&out));
            prop_assert!(out.iter().all(|&b| (b >= 0x20 && b != DEL) || matches!(b, b'\n' | b'\t' | b'\r' | ESC)));
            let text = std::str::from_utf8(&out);
            prop_assert!(text.is_ok());
            let c1 = text.unwrap().chars().any(|c| ('\u{80}'..='\u{9f}').contains(&c));
            prop_assert!(!c1, "a C1 control passed");
            // Any chunking gives the same.
            let mut at: Vec<usize> = cuts.iter().map(|i| i.index(input.len() + 1)).collect();
            at.sort();
            let mut fl = Filter::new();
            let mut chunked = Vec::new();
            let mut from = 0;
            for a in at {
                fl.feed(&input[from..a], &mut chunked);
                from = a;
            }
            fl.feed(&input[from..], &mut chunked);
            fl.finish();
            prop_assert_eq!(&chunked, &out);
            prop_assert_eq!(fl.dropped(), dropped);
            // Filtering again changes nothing.
            prop_assert_eq!(Filter::all(&out), (out.clone(), 0));
        }
    }
}
