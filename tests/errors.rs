//! Every public error enum of the workspace is `#[non_exhaustive]`, so that a release can add a
//! reason without breaking the games that match on them; and docs/errors.md lists every variant
//! with a test that triggers it.

use std::path::Path;

/// Calls `f` with the file, the enum's name, the file's lines and the line of its `pub enum`
/// for every `pub enum …Error` under a `src` folder of `crates/`.
fn for_each_error_enum(root: &Path, mut f: impl FnMut(&Path, &str, &[&str], usize)) {
    for path in rust_files(&root.join("crates")) {
        if !path.components().any(|c| c.as_os_str() == "src") {
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
            if name.ends_with("Error") {
                f(&path, &name, &lines, k);
            }
        }
    }
}

/// `(file, enum name)` of every public error enum that the attributes right above its
/// `pub enum` do not mark `#[non_exhaustive]`.
fn exhaustive_errors(root: &Path) -> Vec<(String, String)> {
    let mut found = Vec::new();
    for_each_error_enum(root, |path, name, lines, k| {
        let marked = lines[..k]
            .iter()
            .rev()
            .take_while(|l| l.trim_start().starts_with("#["))
            .any(|l| l.trim() == "#[non_exhaustive]");
        if !marked {
            found.push((path.display().to_string(), name.to_string()));
        }
    });
    found.sort();
    found
}

#[test]
fn every_public_error_enum_is_non_exhaustive() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    assert_eq!(exhaustive_errors(root), Vec::<(String, String)>::new());
}

/// Every `.rs` file under `dir`, build folders left out.
fn rust_files(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for path in entries.flatten().map(|e| e.path()) {
            if path.is_dir() {
                if path.file_name().is_some_and(|n| n != "target") {
                    dirs.push(path);
                }
            } else if path.extension().is_some_and(|e| e == "rs") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// `(enum, variant)` of every variant of every public error enum: the lines after its
/// `pub enum` that start at four spaces with a capital letter, up to the enum's `}`.
fn error_variants(root: &Path) -> Vec<(String, String)> {
    let mut found = Vec::new();
    for_each_error_enum(root, |_, name, lines, k| {
        for line in lines[k + 1..].iter().take_while(|l| **l != "}") {
            if let Some(v) = line.strip_prefix("    ")
                && v.starts_with(|c: char| c.is_ascii_uppercase())
            {
                let variant: String = v
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                found.push((name.to_string(), variant));
            }
        }
    });
    found.sort();
    found
}

/// The body of the `#[test]` function `name` in `text`, if there is one.
fn test_body<'a>(text: &'a str, name: &str) -> Option<&'a str> {
    let at = text.find(&format!("fn {name}()"))?;
    let before = text[..at].trim_end();
    let attributes = before.rsplit("\n").take_while(|l| {
        let l = l.trim();
        l.starts_with("#[") || l.starts_with("///")
    });
    if !attributes
        .into_iter()
        .any(|l| l.trim().starts_with("#[test]"))
    {
        return None;
    }
    let open = at + text[at..].find('{')?;
    let mut depth = 0usize;
    for (k, c) in text[open..].char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return Some(&text[open..open + k + 1]);
                }
            }
            _ => {}
        }
    }
    None
}

/// docs/errors.md lists every variant of every public error enum, each with a test that
/// exists and names the variant (or, for the one no test can reach, says why), and every
/// plugin rejection message with a test that exists.
#[test]
fn the_error_inventory_lists_every_error_with_a_test_that_triggers_it() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let page = std::fs::read_to_string(root.join("docs/errors.md")).unwrap();
    let variants = error_variants(root);
    assert!(variants.len() >= 79, "{} variants found", variants.len());
    let mut problems = Vec::new();
    let mut untested = Vec::new();
    for (enum_name, variant) in &variants {
        let key = format!("`{enum_name}::{variant}`");
        let Some(row) = page.lines().find(|l| l.starts_with(&format!("| {key} |"))) else {
            problems.push(format!("{key}: not listed"));
            continue;
        };
        let test = row.trim_end_matches(" |").rsplit(" | ").next().unwrap();
        let Some((file, name)) = test.trim_matches('`').split_once("::") else {
            untested.push(format!("{key}: {test}"));
            continue;
        };
        let text = std::fs::read_to_string(root.join(file)).unwrap_or_default();
        match test_body(&text, name) {
            None => problems.push(format!("{key}: no #[test] fn {name} in {file}")),
            Some(body) if !body.contains(variant.as_str()) => {
                problems.push(format!("{key}: {file}::{name} does not name {variant}"))
            }
            Some(_) => {}
        }
    }
    // Rows for plugin messages and the binary: their tests exist.
    for row in page
        .lines()
        .filter(|l| l.starts_with("| `") && l.contains("Rejected`"))
    {
        let test = row.trim_end_matches(" |").rsplit(" | ").next().unwrap();
        let (file, name) = test.trim_matches('`').split_once("::").unwrap();
        let text = std::fs::read_to_string(root.join(file)).unwrap_or_default();
        if test_body(&text, name).is_none() {
            problems.push(format!("{row}: no #[test] fn {name} in {file}"));
        }
    }
    assert_eq!(problems, Vec::<String>::new());
    // Only the goal ids' end is out of any test's reach (2³² goals held at once).
    assert_eq!(untested.len(), 1, "{untested:?}");
    assert!(untested[0].starts_with("`SteerError::TooManyGoals`: none:"));
}
