//! A `redis-server` a test starts on a free loopback port, in its own
//! directory under the target directory, with an append-only file synced
//! on every write (so a restart keeps what it acknowledged). Shared by the
//! runtime's shared-store tests and the devices example's replicas test
//! (which include this file by path).

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// A `redis-server` on loopback, killed on drop.
pub struct Server {
    child: Option<Child>,
    port: u16,
    dir: PathBuf,
    /// More `redis-server` arguments.
    extra: Vec<String>,
}

impl Server {
    /// A fresh server, or `None` (said) when `redis-server` is not here.
    pub fn start(name: &str) -> Option<Server> {
        Server::start_with(name, &[])
    }

    /// [`start`](Self::start) with more `redis-server` arguments.
    pub fn start_with(name: &str, extra: &[&str]) -> Option<Server> {
        if Command::new("redis-server")
            .arg("--version")
            .output()
            .is_err()
        {
            assert!(
                std::env::var("CI").is_err(),
                "redis-server is not installed (.ci/run installs Debian's redis-server)"
            );
            eprintln!("skipped: redis-server is not installed");
            return None;
        }
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
            .join("redis")
            .join(name);
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let mut server = Server {
            child: None,
            port,
            dir,
            extra: extra.iter().map(|arg| (*arg).to_owned()).collect(),
        };
        server.restart();
        Some(server)
    }

    /// The server process's id, while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    /// Starts (again) on the same port and directory, and waits until it
    /// answers.
    pub fn restart(&mut self) {
        let child = Command::new("redis-server")
            .args(["--port", &self.port.to_string(), "--bind", "127.0.0.1"])
            .args([
                "--save",
                "",
                "--appendonly",
                "yes",
                "--appendfsync",
                "always",
            ])
            .arg("--dir")
            .arg(&self.dir)
            .args(&self.extra)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        self.child = Some(child);
        // Readiness of a process just started, not a timing assertion.
        for _ in 0..200 {
            if std::net::TcpStream::connect(("127.0.0.1", self.port)).is_ok() {
                return;
            }
            std::thread::sleep(Duration::from_millis(25));
        }
        panic!("redis-server did not start on port {}", self.port);
    }

    /// Kills the server (as a crash: `SIGKILL`).
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill();
    }
}
