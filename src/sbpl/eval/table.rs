//! The operation table as the model holds it: an operation by its place
//! in [`crate::ops::OPERATIONS`] (`default` last), its aliases followed,
//! and its fallback chain held on the stack.

use crate::ops::Seatbelt;

/// The fallback parent of `op`, as the operation table ([`crate::ops`])
/// gives it for seatbelt (macOS 10.15 table).
fn parent_of(op: &str) -> Option<&'static str> {
    match crate::ops::find(op)?.seatbelt {
        Seatbelt::Parent(p) => Some(p),
        _ => None,
    }
}

/// An operation as the model holds it: its place in the operation table
/// ([`DEFAULT`] for `default`, where every chain ends), so that a question
/// compares numbers, not names.
pub(super) type OpId = usize;

/// The place of `default`, which the table does not list.
const DEFAULT: OpId = crate::ops::OPERATIONS.len();

/// The place of the operation named `name`, as written.
fn place(name: &str) -> Option<OpId> {
    if name == "default" {
        return Some(DEFAULT);
    }
    crate::ops::place(name)
}

/// The name of the operation at `id`.
pub(super) fn name_of(id: OpId) -> &'static str {
    crate::ops::OPERATIONS.get(id).map_or("default", |o| o.name)
}

/// The operation `op` names, through the prelude's aliases; `None` for
/// one not in the table. One search of the table, and a second only for
/// an alias.
pub(super) fn operation(op: &str) -> Option<OpId> {
    let id = place(op)?;
    match crate::ops::OPERATIONS.get(id).map(|o| o.seatbelt) {
        Some(Seatbelt::Alias(to)) => place(to),
        _ => Some(id),
    }
}

/// [`chain`], by place. Every parent is in the table or is `default`, and
/// every alias leads to an operation of the table (`crate::ops`'s test of
/// the table holds it closed), so a parent is always placed.
pub(super) fn chain_of(op: &str) -> Option<Chain> {
    let mut cur = operation(op)?;
    let mut out = Chain {
        ids: [DEFAULT; MAX_CHAIN],
        len: 1,
    };
    out.ids[0] = cur;
    while let Some(Seatbelt::Parent(p)) = crate::ops::OPERATIONS.get(cur).map(|o| o.seatbelt) {
        cur = place(p)?;
        // Longer than any chain of the table (its test holds it so).
        *out.ids.get_mut(out.len)? = cur;
        out.len += 1;
        if cur == DEFAULT {
            break;
        }
    }
    (out.len > 1).then_some(out)
}

/// The most operations in a chain, `default` included.
pub(super) const MAX_CHAIN: usize = 8;

/// An operation's chain, held where it is asked (a question asks one).
#[derive(Clone, Copy)]
pub(super) struct Chain {
    pub(super) ids: [OpId; MAX_CHAIN],
    pub(super) len: usize,
}

impl std::ops::Deref for Chain {
    type Target = [OpId];
    fn deref(&self) -> &[OpId] {
        &self.ids[..self.len]
    }
}

/// The operation and its fallback chain, ending at `default`; `None` for an
/// operation not modelled.
pub fn chain(op: &str) -> Option<Vec<&'static str>> {
    Some(chain_of(op)?.iter().map(|&id| name_of(id)).collect())
}

/// The modelled operations, with their parents (for cross-checks).
pub fn modelled_operations() -> Vec<(&'static str, &'static str)> {
    crate::ops::OPERATIONS
        .iter()
        .filter_map(|o| Some((o.name, parent_of(o.name)?)))
        .collect()
}
