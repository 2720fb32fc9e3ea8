//! Why a schedule primitive, or a rewrite shared with lowering, refused to
//! apply.

/// Why a primitive refused to apply.
#[derive(Clone, Debug, PartialEq)]
pub struct ScheduleError {
    pub message: String,
    pub help: Option<String>,
}

impl ScheduleError {
    pub fn new(message: impl Into<String>) -> ScheduleError {
        ScheduleError { message: message.into(), help: None }
    }

    pub fn help(mut self, h: impl Into<String>) -> ScheduleError {
        self.help = Some(h.into());
        self
    }
}

pub type Result<T> = std::result::Result<T, ScheduleError>;
