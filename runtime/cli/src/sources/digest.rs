//! Digests of source the scan could not read: a file over its budget, a
//! file that does not parse or nests too deep, and the whole tree of a
//! crate holding one (a file not read may name others). Each is SHA-256,
//! the same in every run and checkout, so a change to text the gate cannot
//! read still changes what review sees.

use std::io::Read as _;
use std::path::{Path, PathBuf};

use sha2::Digest as _;

/// At most this many bytes are digested per scan, beyond the source read.
pub(crate) const MAX_DIGESTED_BYTES: u64 = 1 << 30;

/// At most this many files of one tree are digested.
const MAX_TREE_FILES: usize = 100_000;

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

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
    let mut file = std::fs::File::open(path).ok()?;
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

/// SHA-256 over every `.rs` file under `dir` (its `target` directory and
/// `.git` directories left out; symbolic links to files followed, to
/// directories not): each file's path relative to `dir`, its length and its
/// bytes, in the order of the paths. Past the budget, a file counts by its
/// path and length only.
pub(crate) fn of_tree(dir: &Path, budget: &mut u64) -> String {
    let mut found: Vec<(String, PathBuf)> = Vec::new();
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(current) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&current) else {
            continue;
        };
        for entry in entries.flatten() {
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
            } else if name.ends_with(".rs")
                && std::fs::metadata(&path).is_ok_and(|meta| meta.is_file())
                && found.len() < MAX_TREE_FILES
            {
                let shown = path
                    .strip_prefix(dir)
                    .map(|p| p.to_string_lossy().replace('\\', "/"))
                    .unwrap_or(name);
                found.push((shown, path));
            }
        }
    }
    found.sort();
    let mut hasher = sha2::Sha256::new();
    for (shown, path) in found {
        hasher.update(shown.as_bytes());
        hasher.update([0]);
        let len = std::fs::metadata(&path).map_or(0, |meta| meta.len());
        hasher.update(len.to_le_bytes());
        match of_file(&path, budget) {
            Some(digest) => hasher.update(digest.as_bytes()),
            None => hasher.update(b"not digested"),
        }
    }
    hex(&hasher.finalize())
}
