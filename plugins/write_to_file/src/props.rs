//! Properties whose oracle is not the parser: edits built by splicing a file at known line offsets must give
//! the spliced text, in any block order; SEARCH text that cannot occur in the file must leave it untouched.

use crate::diff;
use crate::tests::workspace;
use proptest::prelude::*;
use serde_json::json;

/// A file of unique lines: each starts with its own number, and the rest has no digits or colons, so a block
/// of its lines occurs exactly once, and only at line starts.
fn file_lines() -> impl Strategy<Value = Vec<String>> {
    prop::collection::vec("[a-z ]{0,12}", 1..30)
        .prop_map(|tails| tails.into_iter().enumerate().map(|(i, tail)| format!("{i:04}:{tail}")).collect())
}

/// Replacement lines: any text without line breaks that cannot be a marker.
fn replacement() -> impl Strategy<Value = Vec<String>> {
    prop::collection::vec("[a-zA-Z0-9 _(){};.]{0,16}", 0..4)
}

/// Disjoint line ranges of a file of `len` lines, in file order, from sorted cut points.
fn ranges(len: usize, cuts: &[usize]) -> Vec<(usize, usize)> {
    let mut points: Vec<usize> = cuts.iter().map(|c| c % (len + 1)).collect();
    points.sort_unstable();
    points.dedup();
    points.chunks_exact(2).filter(|pair| pair[0] < pair[1]).map(|pair| (pair[0], pair[1])).collect()
}

fn joined(lines: &[String]) -> String {
    lines.iter().map(|l| format!("{l}\n")).collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, .. ProptestConfig::default() })]

    #[test]
    fn spliced_edits_give_the_spliced_text(
        lines in file_lines(),
        cuts in prop::collection::vec(0usize..64, 2..8),
        replacements in prop::collection::vec(replacement(), 4),
        order in prop::collection::vec(any::<u32>(), 4),
    ) {
        let ranges = ranges(lines.len(), &cuts);
        prop_assume!(!ranges.is_empty());
        // The oracle: the file's lines with each range swapped for its replacement, by index.
        let mut expected = Vec::new();
        let mut at = 0;
        for (k, &(start, end)) in ranges.iter().enumerate() {
            expected.extend_from_slice(&lines[at..start]);
            expected.extend(replacements[k].iter().cloned());
            at = end;
        }
        expected.extend_from_slice(&lines[at..]);

        let blocks: Vec<String> = ranges
            .iter()
            .enumerate()
            .map(|(k, &(start, end))| {
                format!("------- SEARCH\n{}=======\n{}+++++++ REPLACE\n", joined(&lines[start..end]), joined(&replacements[k]))
            })
            .collect();
        // In file order, and in a shuffled order that needs the from-the-start tier.
        let mut shuffled: Vec<usize> = (0..blocks.len()).collect();
        shuffled.sort_by_key(|&i| order[i % order.len()].wrapping_mul(i as u32 + 1));
        for sequence in [(0..blocks.len()).collect::<Vec<_>>(), shuffled] {
            let diff: String = sequence.iter().map(|&i| blocks[i].as_str()).collect();
            let got = diff::construct(&diff, &joined(&lines)).map(|(content, _)| content).map_err(|e| e.message);
            prop_assert_eq!(got, Ok(joined(&expected)));
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, .. ProptestConfig::default() })]

    #[test]
    fn search_text_absent_from_the_file_changes_nothing(
        lines in file_lines(),
        search in prop::collection::vec("[a-z ]{0,10}", 1..4),
        replacement in replacement(),
        crlf in any::<bool>(),
    ) {
        let (_dir, host) = workspace();
        let original = if crlf { joined(&lines).replace('\n', "\r\n") } else { joined(&lines) };
        std::fs::write(host.root.join("f.txt"), &original).unwrap();
        // `§` never occurs in the file, so no tier can match these lines, trimmed or not.
        let search: Vec<String> = search.into_iter().map(|l| format!("§{l}")).collect();
        let diff = format!("------- SEARCH\n{}=======\n{}+++++++ REPLACE", joined(&search), joined(&replacement));
        let error = host.run("replace_in_file", json!({ "path": "f.txt", "diff": diff })).unwrap_err();
        prop_assert!(error.contains("...does not match anything in the file."), "{}", error);
        prop_assert_eq!(std::fs::read(host.root.join("f.txt")).unwrap(), original.into_bytes());
    }
}
