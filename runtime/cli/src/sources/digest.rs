//! Digests of source the scan could not read: a file over its budget, a
//! file that does not parse or nests too deep, and the whole tree of a
//! crate holding one (a file not read may name others). Each is SHA-256,
//! the same in every run and checkout, so a change to text the gate cannot
//! read still changes what review sees.

use std::io::Read as _;
use std::path::{Path, PathBuf};

use sha2::Digest as _;

use crate::source_attrs::hex;

/// At most this many bytes are digested per scan, beyond the source read.
pub(crate) const MAX_DIGESTED_BYTES: u64 = 1 << 30;

/// At most this many files of one tree are digested (the first by path).
const MAX_TREE_FILES: usize = 100_000;

/// SHA-256 of `bytes`, in hex.
pub(crate) fn of_bytes(bytes: &[u8]) -> String {
    hex(&sha2::Sha256::digest(bytes))
}

/// SHA-256 of the file at `path`, read in pieces and charged to `budget`;
/// `None` when the budget does not cover it.
pub(crate) fn of_file(path: &Path, budget: &mut u64) -> Option<String> {
    let len = std::fs::metadata(path).ok()?.len();
    if len > *budget {
        return None;
    }
    *budget -= len;
    // At most the length it reports: a file of `/proc` reports none and
    // would stream without end.
    let mut file = std::fs::File::open(path).ok()?.take(len);
    let mut hasher = sha2::Sha256::new();
    let mut buffer = vec![0u8; 1 << 16];
    loop {
        let read = file.read(&mut buffer).ok()?;
        let Some(piece) = buffer.get(..read).filter(|piece| !piece.is_empty()) else {
            break;
        };
        hasher.update(piece);
    }
    Some(hex(&hasher.finalize()))
}

/// SHA-256 over every file under `dir` (its top-level `target` directory
/// and `.git` directories left out: build output and history; symbolic
/// links to files followed, to directories told by their target): each
/// file's path relative to `dir`, its length and its bytes, in the order of
/// the paths. Past the digest budget a file counts by its path and length,
/// and past [`MAX_TREE_FILES`] paths by nothing; either is said in the
/// digest's text.
pub(crate) fn of_tree(dir: &Path, budget: &mut u64) -> String {
    of_tree_except(dir, budget, &|_| false)
}

/// [`of_tree`] without the files for which `left_out` holds (given each
/// file's path).
pub(crate) fn of_tree_except(
    dir: &Path,
    budget: &mut u64,
    left_out: &dyn Fn(&Path) -> bool,
) -> String {
    // Paths are gathered up to ten times the cap, then sorted, so which
    // ones are digested does not depend on the order the system lists them.
    let mut found: Vec<(String, PathBuf)> = Vec::new();
    let mut links: Vec<(String, String)> = Vec::new();
    let mut more = false;
    let mut dirs = vec![dir.to_path_buf()];
    let shown = |path: &Path| {
        path.strip_prefix(dir)
            .map(|p| p.to_string_lossy().replace('\\', "/"))
            .unwrap_or_else(|_| path.to_string_lossy().into_owned())
    };
    while let Some(current) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&current) else {
            continue;
        };
        for entry in entries.flatten() {
            if found.len() + links.len() >= MAX_TREE_FILES * 10 {
                more = true;
                break;
            }
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if kind.is_dir() {
                let skipped = name == ".git" || (name == "target" && current == dir);
                if !skipped {
                    dirs.push(path);
                }
            } else if kind.is_symlink() && std::fs::metadata(&path).is_ok_and(|m| m.is_dir()) {
                let target = std::fs::read_link(&path)
                    .map(|t| t.to_string_lossy().into_owned())
                    .unwrap_or_default();
                links.push((shown(&path), target));
            } else if std::fs::metadata(&path).is_ok_and(|meta| meta.is_file()) && !left_out(&path)
            {
                found.push((shown(&path), path));
            }
        }
    }
    found.sort();
    links.sort();
    if found.len() > MAX_TREE_FILES {
        found.truncate(MAX_TREE_FILES);
        more = true;
    }
    let mut hasher = sha2::Sha256::new();
    let mut partial = more;
    for (shown, target) in &links {
        hasher.update(shown.as_bytes());
        hasher.update([1]);
        hasher.update(target.as_bytes());
        hasher.update([0]);
    }
    for (shown, path) in found {
        hasher.update(shown.as_bytes());
        hasher.update([0]);
        let len = std::fs::metadata(&path).map_or(0, |meta| meta.len());
        hasher.update(len.to_le_bytes());
        match of_file(&path, budget) {
            Some(digest) => hasher.update(digest.as_bytes()),
            None => {
                partial = true;
                hasher.update(b"not digested");
            }
        }
    }
    let digest = hex(&hasher.finalize());
    if partial {
        format!("{digest}, partial: past the scan's digest budget")
    } else {
        digest
    }
}
