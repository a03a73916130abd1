//! The compile-time benchmark: clean `cargo check` and `cargo build` of a
//! generated crate, incremental `cargo check` and `cargo build` after editing
//! one handler, the time rustc spends expanding macros (`-Ztime-passes`'
//! `macro_expand_crate`) and the expanded line count, for each flavour (see
//! `generate`) and size.
//!
//! Each flavour has one package directory and one target directory under
//! `target/compile-bench/`, reused across sizes: dependencies build once
//! (untimed), and before each timed build only the generated package is
//! cleaned (`cargo clean -p`). The workspace's `Cargo.lock` is copied in, so
//! the dependencies are the versions the workspace uses.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use crate::WRAPPER_ENV;
use crate::generate::Flavour;

/// What to measure.
#[derive(Debug)]
pub(crate) struct Options {
    sizes: Vec<usize>,
    runs: usize,
    flavours: Vec<Flavour>,
}

impl Options {
    /// Reads `--sizes 10,50,200`, `--runs 1` and `--flavours …`.
    pub(crate) fn parse(args: &[String]) -> Result<Options, String> {
        let mut options = Options {
            sizes: vec![10, 50, 200],
            runs: 1,
            flavours: Flavour::ALL.to_vec(),
        };
        let mut args = args.iter();
        while let Some(flag) = args.next() {
            let value = args.next().ok_or_else(|| format!("{flag} needs a value"))?;
            match flag.as_str() {
                "--sizes" => {
                    options.sizes = value
                        .split(',')
                        .map(|n| {
                            n.trim()
                                .parse::<usize>()
                                .map_err(|e| format!("--sizes: {e}"))
                        })
                        .collect::<Result<_, _>>()?;
                    if options.sizes.contains(&0) {
                        return Err("--sizes: every size is at least 1".to_owned());
                    }
                    options.sizes.sort_unstable();
                    options.sizes.dedup();
                }
                "--runs" => {
                    options.runs = value.parse().map_err(|e| format!("--runs: {e}"))?;
                    options.runs = options.runs.max(1);
                }
                "--flavours" => {
                    options.flavours = value
                        .split(',')
                        .map(|name| match name.trim() {
                            "agent-surface" => Ok(Flavour::AgentSurface),
                            "rmcp" => Ok(Flavour::Rmcp),
                            "floor" => Ok(Flavour::Floor),
                            other => Err(format!("--flavours: unknown flavour `{other}`")),
                        })
                        .collect::<Result<_, _>>()?;
                }
                other => return Err(format!("unknown option `{other}`")),
            }
        }
        if options.sizes.is_empty() || options.flavours.is_empty() {
            return Err("nothing to measure".to_owned());
        }
        Ok(options)
    }
}

/// One flavour at one size.
#[derive(Clone, Copy, Debug)]
struct Sample {
    n: usize,
    check: Duration,
    build: Duration,
    incremental: Duration,
    incremental_build: Duration,
    /// rustc's `macro_expand_crate` in a clean build of the crate.
    expansion: Duration,
    lines: usize,
}

/// Runs the benchmark and prints the markdown tables.
pub(crate) fn run(options: &Options) -> Result<(), String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .ok_or("xtask is not inside a workspace")?
        .to_path_buf();
    let base = root.join("target").join("compile-bench");
    let started = Instant::now();
    let mut results = Vec::new();
    for &flavour in &options.flavours {
        let bench = Bench::create(&root, &base, flavour)?;
        eprintln!("[{}] building dependencies (untimed)", flavour.label());
        let first = options.sizes.first().copied().unwrap_or(1);
        bench.write(first, false)?;
        bench.cargo(&["check"], false)?;
        bench.cargo(&["build"], false)?;
        let mut samples = Vec::new();
        for &n in &options.sizes {
            let sample = bench.measure(n, options.runs)?;
            eprintln!(
                "[{}] n={n}: check {:.2}s, build {:.2}s, incremental check {:.2}s, incremental build {:.2}s, expansion {:.2}s, {} expanded lines",
                flavour.label(),
                sample.check.as_secs_f64(),
                sample.build.as_secs_f64(),
                sample.incremental.as_secs_f64(),
                sample.incremental_build.as_secs_f64(),
                sample.expansion.as_secs_f64(),
                sample.lines
            );
            samples.push(sample);
        }
        results.push((flavour, samples));
    }
    print_report(&results, options);
    eprintln!("whole run: {:.0}s", started.elapsed().as_secs_f64());
    Ok(())
}

/// A generated package and its target directory.
struct Bench {
    flavour: Flavour,
    dir: PathBuf,
    target: PathBuf,
    cargo: String,
}

impl Bench {
    fn create(root: &Path, base: &Path, flavour: Flavour) -> Result<Bench, String> {
        let dir = base.join(flavour.package());
        std::fs::create_dir_all(dir.join("src")).map_err(|e| format!("{}: {e}", dir.display()))?;
        let runtime = root.join("runtime");
        let runtime = runtime.to_str().ok_or("the workspace path is not UTF-8")?;
        write_file(&dir.join("Cargo.toml"), &flavour.manifest(runtime))?;
        std::fs::copy(root.join("Cargo.lock"), dir.join("Cargo.lock"))
            .map_err(|e| format!("copying Cargo.lock: {e}"))?;
        Ok(Bench {
            flavour,
            target: dir.join("target"),
            dir,
            cargo: std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned()),
        })
    }

    fn write(&self, n: usize, edited: bool) -> Result<(), String> {
        write_file(
            &self.dir.join("src").join("lib.rs"),
            &self.flavour.source(n, edited),
        )
    }

    /// A cargo command in the package, with its own target directory.
    fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(&self.cargo);
        command
            .args(args)
            .current_dir(&self.dir)
            .env("CARGO_TARGET_DIR", &self.target)
            .env_remove("RUSTC_WORKSPACE_WRAPPER")
            .env_remove("RUSTFLAGS")
            .env_remove("CARGO_ENCODED_RUSTFLAGS");
        command
    }

    /// Runs cargo, returning its wall time (and stdout when `capture`).
    fn cargo(&self, args: &[&str], capture: bool) -> Result<(Duration, String), String> {
        run_command(self.command(args), capture)
    }

    fn clean(&self) -> Result<(), String> {
        self.cargo(&["clean", "--quiet", "-p", self.flavour.package()], false)
            .map(drop)
    }

    /// The fastest of `runs` of each measurement at size `n`.
    fn measure(&self, n: usize, runs: usize) -> Result<Sample, String> {
        let mut best: Option<Sample> = None;
        for _ in 0..runs {
            self.write(n, false)?;
            self.clean()?;
            let (check, _) = self.cargo(&["check", "--quiet"], false)?;
            self.write(n, true)?;
            let (incremental, _) = self.cargo(&["check", "--quiet"], false)?;
            self.write(n, false)?;
            self.clean()?;
            let (build, _) = self.cargo(&["build", "--quiet"], false)?;
            self.write(n, true)?;
            let (incremental_build, _) = self.cargo(&["build", "--quiet"], false)?;
            self.write(n, false)?;
            let expansion = self.expansion()?;
            let sample = Sample {
                n,
                check,
                build,
                incremental,
                incremental_build,
                expansion,
                lines: 0,
            };
            best = Some(match best {
                None => sample,
                Some(b) => Sample {
                    n,
                    check: b.check.min(sample.check),
                    build: b.build.min(sample.build),
                    incremental: b.incremental.min(sample.incremental),
                    incremental_build: b.incremental_build.min(sample.incremental_build),
                    expansion: b.expansion.min(sample.expansion),
                    lines: 0,
                },
            });
        }
        let mut sample = best.ok_or("no run")?;
        sample.lines = self.expanded_lines()?;
        Ok(sample)
    }

    /// A `cargo rustc` of the generated crate alone with rustc under
    /// `RUSTC_BOOTSTRAP=1` (this binary as its workspace wrapper, so no
    /// dependency's fingerprint changes).
    fn bootstrapped(&self, rustc_args: &[&str]) -> Result<Command, String> {
        let exe = std::env::current_exe().map_err(|e| format!("current_exe: {e}"))?;
        let mut args = vec!["rustc", "--quiet", "--lib", "--"];
        args.extend_from_slice(rustc_args);
        let mut command = self.command(&args);
        command
            .env("RUSTC_WORKSPACE_WRAPPER", exe)
            .env(WRAPPER_ENV, "1");
        Ok(command)
    }

    /// rustc's own `macro_expand_crate` time (every macro: derives, the
    /// flavour's attribute macros, `format!`…) in a clean build of the crate.
    fn expansion(&self) -> Result<Duration, String> {
        self.clean()?;
        let (_, _, stderr) = run_command_full(self.bootstrapped(&["-Ztime-passes"])?, false)?;
        let seconds = stderr
            .lines()
            .find(|line| line.trim_end().ends_with("\tmacro_expand_crate"))
            .and_then(|line| line.strip_prefix("time:"))
            .and_then(|rest| rest.split(';').next())
            .and_then(|value| value.trim().parse::<f64>().ok())
            .ok_or("-Ztime-passes printed no macro_expand_crate line")?;
        // The next timed build starts clean anyway; this one must not
        // leave a bootstrapped artifact behind for it.
        self.clean()?;
        Ok(Duration::from_secs_f64(seconds))
    }

    /// Non-blank lines of `-Zunpretty=expanded`.
    fn expanded_lines(&self) -> Result<usize, String> {
        let (_, stdout) = run_command(self.bootstrapped(&["-Zunpretty=expanded"])?, true)?;
        Ok(stdout
            .lines()
            .filter(|line| !line.trim().is_empty())
            .count())
    }
}

fn write_file(path: &Path, text: &str) -> Result<(), String> {
    // Unchanged content keeps its mtime: cargo sees no edit.
    if std::fs::read_to_string(path).is_ok_and(|old| old == text) {
        return Ok(());
    }
    std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))
}

fn run_command(command: Command, capture: bool) -> Result<(Duration, String), String> {
    run_command_full(command, capture).map(|(elapsed, stdout, _)| (elapsed, stdout))
}

/// Runs `command`: its wall time, its stdout (when `capture`) and stderr.
fn run_command_full(
    mut command: Command,
    capture: bool,
) -> Result<(Duration, String, String), String> {
    command.stdin(Stdio::null()).stderr(Stdio::piped());
    command.stdout(if capture {
        Stdio::piped()
    } else {
        Stdio::null()
    });
    let started = Instant::now();
    let output = command
        .output()
        .map_err(|e| format!("running {command:?}: {e}"))?;
    let elapsed = started.elapsed();
    if !output.status.success() {
        return Err(format!(
            "{command:?} failed:\n{}",
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    Ok((
        elapsed,
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    ))
}

/// Stands in for rustc: runs it (the first argument) with `RUSTC_BOOTSTRAP=1`.
pub(crate) fn bootstrap_wrapper() -> ExitCode {
    let mut args = std::env::args_os().skip(1);
    let Some(rustc) = args.next() else {
        eprintln!("error: the rustc wrapper needs the rustc path");
        return ExitCode::FAILURE;
    };
    match Command::new(rustc)
        .args(args)
        .env("RUSTC_BOOTSTRAP", "1")
        .env_remove(WRAPPER_ENV)
        .status()
    {
        Ok(status) if status.success() => ExitCode::SUCCESS,
        Ok(status) => ExitCode::from(u8::try_from(status.code().unwrap_or(1)).unwrap_or(1)),
        Err(err) => {
            eprintln!("error: running rustc: {err}");
            ExitCode::FAILURE
        }
    }
}

fn secs(d: Duration) -> String {
    format!("{:.2} s", d.as_secs_f64())
}

/// Milliseconds per capability between the smallest and largest size.
fn slope(samples: &[Sample], value: impl Fn(&Sample) -> f64) -> Option<f64> {
    let (first, last) = (samples.first()?, samples.last()?);
    if last.n == first.n {
        return Some(value(last) / last.n as f64);
    }
    Some((value(last) - value(first)) / (last.n - first.n) as f64)
}

fn ratio(a: Option<f64>, b: Option<f64>) -> String {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => format!("{:.2}×", a / b),
        _ => "—".to_owned(),
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// One figure of a sample, in the unit its column names.
type Measure = dyn Fn(&Sample) -> f64;

fn print_report(results: &[(Flavour, Vec<Sample>)], options: &Options) {
    println!(
        "\n| flavour | N | clean `cargo check` | clean `cargo build` | incremental `cargo check` | incremental `cargo build` | macro expansion | expanded lines | lines / capability |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    for (flavour, samples) in results {
        for s in samples {
            println!(
                "| {} | {} | {} | {} | {} | {} | {} | {} | {:.0} |",
                flavour.label(),
                s.n,
                secs(s.check),
                secs(s.build),
                secs(s.incremental),
                secs(s.incremental_build),
                secs(s.expansion),
                s.lines,
                s.lines as f64 / s.n as f64
            );
        }
    }
    let per_cap = |flavour: Flavour, value: &dyn Fn(&Sample) -> f64| {
        results
            .iter()
            .find(|(f, _)| *f == flavour)
            .and_then(|(_, samples)| slope(samples, value))
    };
    let columns: [(&str, &Measure); 6] = [
        ("check ms", &|s| ms(s.check)),
        ("build ms", &|s| ms(s.build)),
        ("incremental check ms", &|s| ms(s.incremental)),
        ("incremental build ms", &|s| ms(s.incremental_build)),
        ("expansion ms", &|s| ms(s.expansion)),
        ("expanded lines", &|s| s.lines as f64),
    ];
    let (lo, hi) = (
        options.sizes.first().copied().unwrap_or(0),
        options.sizes.last().copied().unwrap_or(0),
    );
    println!(
        "\nPer capability (the slope from N = {lo} to N = {hi}; ratios are agent-surface's over the other flavour's):\n"
    );
    let header: Vec<String> = columns
        .iter()
        .map(|(name, _)| format!("{name} / capability"))
        .collect();
    println!("| flavour | {} |", header.join(" | "));
    println!("|---|{}", "---|".repeat(columns.len()));
    for (flavour, _) in results {
        let cells: Vec<String> = columns
            .iter()
            .map(|(_, value)| format!("{:.1}", per_cap(*flavour, *value).unwrap_or(f64::NAN)))
            .collect();
        println!("| {} | {} |", flavour.label(), cells.join(" | "));
    }
    for other in [Flavour::Rmcp, Flavour::Floor] {
        let a = Flavour::AgentSurface;
        let cells: Vec<String> = columns
            .iter()
            .map(|(_, value)| ratio(per_cap(a, *value), per_cap(other, *value)))
            .collect();
        println!(
            "| agent-surface / {} | {} |",
            other.label(),
            cells.join(" | ")
        );
    }
    let expansion = |s: &Sample| ms(s.expansion);
    if let (Some(a), Some(floor)) = (
        per_cap(Flavour::AgentSurface, &expansion),
        per_cap(Flavour::Floor, &expansion),
    ) {
        println!(
            "\nThe agent-surface macros' own expansion (agent-surface's expansion over the derive floor's): {:.1} ms per capability.",
            a - floor
        );
    }
}
