//! Why a schedule primitive, or a rewrite shared with lowering, refused to
//! apply: a named kind, so that a caller (a test, the tuner, a tool) can
//! tell the reasons apart without reading the message, and the message
//! that says it to a person.

/// The class of a refusal. The diagnostic shows it as its code
/// (`schedule::not-found`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// A loop or block the call names is not in the function (any more: a
    /// loop that was split or fused is replaced by the loops it returned).
    NotFound,
    /// An argument's value is not one the primitive takes: a factor, an
    /// index, an axis, a storage scope or thread axis name.
    BadArgument,
    /// A precondition of the primitive on the function does not hold: the
    /// loops and blocks are not of the shape it needs, or applying it would
    /// change what the function computes. The message says which.
    Precondition,
    /// TVM allows it; tirc does not implement it yet.
    Unsupported,
    /// A bug of tirc, not of the schedule.
    Internal,
}

impl ErrorKind {
    pub const ALL: [ErrorKind; 5] = [
        ErrorKind::NotFound,
        ErrorKind::BadArgument,
        ErrorKind::Precondition,
        ErrorKind::Unsupported,
        ErrorKind::Internal,
    ];

    /// The code diagnostics carry: `schedule::bad-argument`.
    pub fn code(self) -> &'static str {
        match self {
            ErrorKind::NotFound => "schedule::not-found",
            ErrorKind::BadArgument => "schedule::bad-argument",
            ErrorKind::Precondition => "schedule::precondition",
            ErrorKind::Unsupported => "schedule::unsupported",
            ErrorKind::Internal => "schedule::internal",
        }
    }
}

/// Why a primitive refused to apply.
#[derive(Clone, Debug, PartialEq)]
pub struct ScheduleError {
    pub kind: ErrorKind,
    pub message: String,
    pub help: Option<String>,
}

impl ScheduleError {
    /// A precondition that does not hold (`ErrorKind::Precondition`).
    pub fn new(message: impl Into<String>) -> ScheduleError {
        ScheduleError::of(ErrorKind::Precondition, message)
    }

    pub fn of(kind: ErrorKind, message: impl Into<String>) -> ScheduleError {
        ScheduleError { kind, message: message.into(), help: None }
    }

    pub fn not_found(message: impl Into<String>) -> ScheduleError {
        ScheduleError::of(ErrorKind::NotFound, message)
    }

    pub fn bad_argument(message: impl Into<String>) -> ScheduleError {
        ScheduleError::of(ErrorKind::BadArgument, message)
    }

    pub fn unsupported(message: impl Into<String>) -> ScheduleError {
        ScheduleError::of(ErrorKind::Unsupported, message)
    }

    pub fn internal(message: impl Into<String>) -> ScheduleError {
        ScheduleError::of(ErrorKind::Internal, format!("internal error: {}", message.into()))
    }

    pub fn help(mut self, h: impl Into<String>) -> ScheduleError {
        self.help = Some(h.into());
        self
    }
}

pub type Result<T> = std::result::Result<T, ScheduleError>;
