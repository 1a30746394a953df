//! Every reference in the code and the docs resolves inside the repository: each label citing a
//! section or test case of a seed's digest (`digest 004 §12 test 11`, `digest 001 T11`) has its
//! row in docs/references.md, and nothing cites the project's notes kept outside it (its design
//! notes, its survey of other systems, its issue tracker).

use std::path::{Path, PathBuf};

/// The text files a reader of the repository meets: code, docs, scenarios, scripts.
fn readable_files(root: &Path) -> Vec<PathBuf> {
    let mut files = vec![root.join("README.md"), root.join("CHANGELOG.md")];
    let mut dirs: Vec<PathBuf> = [
        "crates", "docs", "assets", "scripts", "examples", "src", "tests", "fuzz",
    ]
    .iter()
    .map(|d| root.join(d))
    .collect();
    while let Some(dir) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for path in entries.flatten().map(|e| e.path()) {
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if path.is_dir() {
                if !matches!(name.as_str(), "target" | "corpus" | "artifacts" | "seeds") {
                    dirs.push(path);
                }
            } else if [".rs", ".md", ".ron", ".py", ".sh", ".toml"]
                .iter()
                .any(|e| name.ends_with(e))
            {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// The digest labels in `text`: `digest NNN §x[.y][ test n]` and `digest NNN Tn|An|En`.
fn digest_labels(text: &str) -> Vec<String> {
    let mut labels = Vec::new();
    let lower = text.to_lowercase();
    let mut rest = lower.as_str();
    while let Some(at) = rest.find("digest ") {
        rest = &rest[at + 7..];
        let Some(seed) = rest
            .get(..3)
            .filter(|s| s.bytes().all(|b| b.is_ascii_digit()))
        else {
            continue;
        };
        let after = &rest[3..];
        if let Some(section) = after.strip_prefix(" §") {
            let number: String = section
                .chars()
                .take_while(|c| c.is_ascii_digit() || *c == '.')
                .collect();
            let number = number.trim_end_matches('.');
            if number.is_empty() {
                continue;
            }
            let mut label = format!("digest {seed} §{number}");
            let tail = &section[number.len()..];
            if let Some(test) = tail.strip_prefix(" test ") {
                let n: String = test.chars().take_while(|c| c.is_ascii_digit()).collect();
                if !n.is_empty() {
                    labels.push(format!("{label} test {n}"));
                }
            }
            labels.push(std::mem::take(&mut label));
        } else if let Some(id) = after.strip_prefix(' ') {
            let kind = id.chars().next().unwrap_or(' ');
            let n: String = id[1..].chars().take_while(|c| c.is_ascii_digit()).collect();
            if matches!(kind, 't' | 'a' | 'e') && !n.is_empty() {
                labels.push(format!("digest {seed} {}{n}", kind.to_ascii_uppercase()));
            }
        }
    }
    labels
}

#[test]
fn every_digest_label_has_its_row_in_the_references() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let page = std::fs::read_to_string(root.join("docs/references.md")).unwrap();
    let rows: std::collections::HashSet<String> = page
        .lines()
        .filter_map(|l| l.strip_prefix("| digest "))
        .map(|l| format!("digest {}", l.split(" |").next().unwrap()).to_lowercase())
        .collect();
    assert!(rows.len() > 200, "{} rows", rows.len());
    let mut cited = 0;
    let mut missing = Vec::new();
    for file in readable_files(root) {
        let text = std::fs::read_to_string(&file).unwrap();
        for label in digest_labels(&text) {
            cited += 1;
            if !rows.contains(&label.to_lowercase()) {
                missing.push(format!("{}: {label}", file.display()));
            }
        }
    }
    missing.sort();
    missing.dedup();
    assert!(cited > 150, "{cited} citations found");
    assert_eq!(missing, Vec::<String>::new());
}

#[test]
fn nothing_cites_notes_kept_outside_the_repository() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut found = Vec::new();
    for file in readable_files(root) {
        if file.ends_with("docs/references.md") || file.ends_with("tests/references.rs") {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap();
        for (k, line) in text.lines().enumerate() {
            let lower = line.to_lowercase();
            let issue = lower
                .match_indices("issue ")
                .any(|(at, _)| lower[at + 6..].starts_with(|c: char| c.is_ascii_digit()));
            if lower.contains("design.md")
                || line.contains("DESIGN ")
                || lower.contains("anchors §")
                || issue
            {
                found.push(format!("{}:{}: {line}", file.display(), k + 1));
            }
        }
    }
    assert_eq!(found, Vec::<String>::new());
}
