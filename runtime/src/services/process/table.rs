//! The process table as `/proc` shows it: who is whose parent, which group and session, and since when —
//! enough to find every process a command started, including those that left its process group or session.

use std::collections::{HashMap, HashSet};

/// One process, from `/proc/<pid>/stat`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Entry {
    pub pid: i32,
    pub ppid: i32,
    pub pgrp: i32,
    /// The session id.
    pub session: i32,
    /// Clock ticks after boot; with the pid it names one process even after the pid is reused.
    pub start: u64,
    /// Exited but not yet reaped by its parent.
    pub zombie: bool,
}

/// Every process visible now. Processes come and go while it is read; those gone are simply missing.
pub(crate) fn snapshot() -> Vec<Entry> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(Result::ok)
        .filter_map(|entry| entry.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(|pid| std::fs::read_to_string(format!("/proc/{pid}/stat")).ok().and_then(|t| parse_stat(&t)))
        .collect()
}

fn parse_stat(text: &str) -> Option<Entry> {
    // The command name sits in parentheses and may itself hold spaces and `)`: the fields start after the
    // last `)`.
    let (head, rest) = text.rsplit_once(')')?;
    let pid = head.split_once('(')?.0.trim().parse().ok()?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // After the name: state, ppid, pgrp, session, … with starttime the 20th (field 22 of proc(5)).
    let state = *fields.first()?;
    Some(Entry {
        pid,
        ppid: fields.get(1)?.parse().ok()?,
        pgrp: fields.get(2)?.parse().ok()?,
        session: fields.get(3)?.parse().ok()?,
        start: fields.get(19)?.parse().ok()?,
        zombie: state == "Z" || state == "X",
    })
}

/// Whether the environment of `pid` holds exactly `variable` (`NAME=value`). A zombie has no environment left.
pub(crate) fn environ_has(pid: i32, variable: &str) -> bool {
    std::fs::read(format!("/proc/{pid}/environ"))
        .is_ok_and(|env| env.split(|byte| *byte == 0).any(|entry| entry == variable.as_bytes()))
}

/// `roots` and every process below them in `table`.
pub(crate) fn with_descendants(table: &[Entry], roots: &HashSet<i32>) -> HashSet<i32> {
    let mut children: HashMap<i32, Vec<i32>> = HashMap::new();
    for entry in table {
        children.entry(entry.ppid).or_default().push(entry.pid);
    }
    let mut found = HashSet::new();
    let mut stack: Vec<i32> = roots.iter().copied().collect();
    while let Some(pid) = stack.pop() {
        if found.insert(pid)
            && let Some(below) = children.get(&pid)
        {
            stack.extend(below);
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_lines_with_awkward_names_parse() {
        let line = "4242 (a) b (c)) S 17 4242 4242 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 1 0 987654 1000 10";
        let entry = parse_stat(line).unwrap();
        assert_eq!(entry, Entry { pid: 4242, ppid: 17, pgrp: 4242, session: 4242, start: 987654, zombie: false });
        assert!(parse_stat("1 (x) Z 0 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 5 0 0").unwrap().zombie);
        assert_eq!(parse_stat("garbage"), None);
    }

    #[test]
    fn this_process_is_in_the_table_with_its_environment() {
        let me = std::process::id() as i32;
        let table = snapshot();
        let entry = table.iter().find(|e| e.pid == me).unwrap();
        assert!(!entry.zombie);
        let path = format!("PATH={}", std::env::var("PATH").unwrap_or_default());
        assert!(environ_has(me, &path));
        assert!(!environ_has(me, "TOOLSHED_NO_SUCH_VARIABLE=1"));
        assert!(with_descendants(&table, &[entry.ppid].into()).contains(&me));
    }
}
