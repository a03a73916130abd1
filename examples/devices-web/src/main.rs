//! The devices example in the page: in a browser, launches the app with
//! Dioxus web; natively, says how to build and open it.

#[cfg(all(target_arch = "wasm32", target_os = "unknown"))]
fn main() {
    dioxus_web::launch::launch_cfg(devices_web::app, dioxus_web::Config::new());
}

#[cfg(not(all(target_arch = "wasm32", target_os = "unknown")))]
fn main() -> std::process::ExitCode {
    eprintln!(
        "devices-web runs in a browser page. Build it with\n\n    \
         cargo run -p xtask -- devices-web\n\n\
         then serve target/devices-web/ (for example `python3 -m http.server -d target/devices-web 8080`)\n\
         and open http://127.0.0.1:8080 in `chromium --enable-features=WebMCP`."
    );
    std::process::ExitCode::from(2)
}
