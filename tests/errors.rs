//! Every public error enum of the workspace is `#[non_exhaustive]`, so that a release can add a
//! reason without breaking the games that match on them.

use std::path::Path;

/// `(file, enum name)` of every `pub enum …Error` under `crates/*/src` that the line before
/// its `pub enum` (after any derive) does not mark `#[non_exhaustive]`.
fn exhaustive_errors(root: &Path) -> Vec<(String, String)> {
    let mut found = Vec::new();
    let mut dirs = vec![root.join("crates")];
    while let Some(dir) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                if path.file_name().is_some_and(|n| n != "target") {
                    dirs.push(path);
                }
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            let lines: Vec<&str> = text.lines().collect();
            for (k, line) in lines.iter().enumerate() {
                let Some(rest) = line.strip_prefix("pub enum ") else {
                    continue;
                };
                let name: String = rest
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                if !name.ends_with("Error") {
                    continue;
                }
                // The attributes right above it.
                let marked = lines[..k]
                    .iter()
                    .rev()
                    .take_while(|l| l.trim_start().starts_with("#["))
                    .any(|l| l.trim() == "#[non_exhaustive]");
                if !marked {
                    found.push((path.display().to_string(), name));
                }
            }
        }
    }
    found.sort();
    found
}

#[test]
fn every_public_error_enum_is_non_exhaustive() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    assert_eq!(exhaustive_errors(root), Vec::<(String, String)>::new());
}
