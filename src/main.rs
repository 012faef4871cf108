#![forbid(unsafe_code)]

fn main() {
    std::process::exit(sealc::cli::main());
}
