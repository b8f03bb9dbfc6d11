//! Next-hop groups: the values stored in the trie's leaves.
//!
//! A leaf holds a `u32` group id; group 0 means "no route". Groups are deduplicated (two routes
//! with the same next-hop list share one group), so the table of groups stays as small as the
//! number of distinct next-hop sets — in practice the number of adjacencies — and stays in cache
//! however many routes point at it. ECMP: a group holds 1 to [`MAX_ECMP`] next hops and the flow
//! hash picks one (`hash % n`), so one flow always takes the same next hop.

use std::collections::HashMap;

use crate::{NextHop, MAX_ECMP};

/// Group id as stored in leaves. 0 = no route.
pub(crate) type GroupId = u32;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct Group {
    n: u32,
    nhs: [NextHop; MAX_ECMP],
}

impl Group {
    #[inline(always)]
    fn pick(&self, flow_hash: u32) -> NextHop {
        if self.n == 1 {
            self.nhs[0]
        } else {
            self.nhs[(flow_hash % self.n) as usize]
        }
    }

    pub(crate) fn next_hops(&self) -> &[NextHop] {
        &self.nhs[..self.n as usize]
    }
}

/// The group table with reference counts.
#[derive(Debug, Clone)]
pub(crate) struct Groups {
    /// Index = group id; entry 0 is the "no route" placeholder.
    groups: Vec<Group>,
    refs: Vec<u32>,
    by_value: HashMap<Group, GroupId>,
    free: Vec<GroupId>,
}

impl Default for Groups {
    fn default() -> Self {
        Self {
            groups: vec![Group {
                n: 0,
                nhs: [0; MAX_ECMP],
            }],
            refs: vec![0],
            by_value: HashMap::new(),
            free: Vec::new(),
        }
    }
}

impl Groups {
    /// Take a reference to the group of `nhs` (1..=MAX_ECMP next hops, checked by the caller).
    pub(crate) fn acquire(&mut self, nhs: &[NextHop]) -> GroupId {
        debug_assert!(!nhs.is_empty() && nhs.len() <= MAX_ECMP);
        let mut g = Group {
            n: nhs.len() as u32,
            nhs: [0; MAX_ECMP],
        };
        g.nhs[..nhs.len()].copy_from_slice(nhs);
        let id = match self.by_value.get(&g) {
            Some(&id) => id,
            None => {
                let id = match self.free.pop() {
                    Some(id) => {
                        self.groups[id as usize] = g;
                        id
                    }
                    None => {
                        self.groups.push(g);
                        self.refs.push(0);
                        (self.groups.len() - 1) as GroupId
                    }
                };
                self.by_value.insert(g, id);
                id
            }
        };
        self.refs[id as usize] += 1;
        id
    }

    /// Drop a reference taken by [`acquire`](Self::acquire).
    pub(crate) fn release(&mut self, id: GroupId) {
        let r = &mut self.refs[id as usize];
        *r -= 1;
        if *r == 0 {
            let g = self.groups[id as usize];
            self.by_value.remove(&g);
            self.free.push(id);
        }
    }

    pub(crate) fn get(&self, id: GroupId) -> &Group {
        &self.groups[id as usize]
    }

    /// The next hop of group `id` for a flow; `None` for group 0.
    #[inline(always)]
    pub(crate) fn resolve(&self, id: GroupId, flow_hash: u32) -> Option<NextHop> {
        if id == 0 {
            None
        } else {
            Some(self.groups[id as usize].pick(flow_hash))
        }
    }

    pub(crate) fn memory_bytes(&self) -> usize {
        self.groups.capacity() * std::mem::size_of::<Group>()
            + self.refs.capacity() * 4
            + self.free.capacity() * 4
            + self.by_value.capacity() * (std::mem::size_of::<Group>() + 4 + 8)
    }
}
