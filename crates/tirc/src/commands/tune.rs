//! `tirc tune FILE --schedule S`: the command lives in the library
//! (`tirc::tune::cli`), so that the tests can run it in-process; this file
//! hands it the process's streams.

pub fn main(a: tirc::tune::cli::Args) -> u8 {
    let mut out = std::io::stdout().lock();
    let mut err = std::io::stderr();
    tirc::tune::cli::main(a, &mut out, &mut err)
}
