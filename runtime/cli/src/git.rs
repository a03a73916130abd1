//! The artifact as committed at a git ref (`--base`), read with the `git`
//! command line. A ref that does not resolve, or no git repository, is a
//! [`Fatal`] failure; an artifact absent at the ref is `None`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use crate::Fatal;

fn git(dir: &Path, args: &[&str]) -> Result<Output, Fatal> {
    Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|err| Fatal(format!("cannot run git: {err}")))
}

/// `path` with its directory resolved (the file itself may not exist). The
/// file name is kept as it is, never followed: an artifact that is a
/// symbolic link is looked up at its own path at the base, not at its
/// target's (which a change could point at a file holding the new surface).
fn resolved(path: &Path) -> PathBuf {
    match (path.parent(), path.file_name()) {
        (Some(dir), Some(name)) => std::fs::canonicalize(if dir.as_os_str().is_empty() {
            Path::new(".")
        } else {
            dir
        })
        .map(|dir| dir.join(name))
        .unwrap_or_else(|_| path.to_path_buf()),
        _ => path.to_path_buf(),
    }
}

/// The text of `artifact` at `reference`; `None` when it did not exist
/// there.
pub(crate) fn show(artifact: &Path, reference: &str) -> Result<Option<String>, Fatal> {
    let artifact = resolved(artifact);
    let dir = artifact.parent().unwrap_or(Path::new("."));
    let top = git(dir, &["rev-parse", "--show-toplevel"])?;
    if !top.status.success() {
        return Err(Fatal(format!(
            "--base needs a git repository: {}",
            String::from_utf8_lossy(&top.stderr).trim()
        )));
    }
    let top = String::from_utf8_lossy(&top.stdout).trim().to_owned();
    let top = std::fs::canonicalize(&top).unwrap_or_else(|_| PathBuf::from(top));
    let relative = artifact
        .strip_prefix(&top)
        .map_err(|_| Fatal(format!("{} is outside the repository", artifact.display())))?;
    let relative = relative.to_string_lossy().replace('\\', "/");
    let commit = format!("{reference}^{{commit}}");
    let verify = git(dir, &["rev-parse", "--verify", "--quiet", &commit])?;
    if !verify.status.success() {
        return Err(Fatal(format!("git ref `{reference}` does not resolve")));
    }
    let object = format!("{reference}:{relative}");
    if !git(dir, &["cat-file", "-e", &object])?.status.success() {
        return Ok(None);
    }
    // Its size first: an oversized artifact is refused before it is read.
    let size = git(dir, &["cat-file", "-s", &object])?;
    let bytes: u64 = String::from_utf8_lossy(&size.stdout)
        .trim()
        .parse()
        .unwrap_or(u64::MAX);
    crate::artifact::within_size(bytes, &format!("the artifact at {reference}"))?;
    let output = git(dir, &["show", &object])?;
    if !output.status.success() {
        return Err(Fatal(format!(
            "git show {object} failed: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        )));
    }
    Ok(Some(String::from_utf8_lossy(&output.stdout).into_owned()))
}
