//! The command-permission controller (a placeholder that allows everything; its real parser is being written).

/// Parsed `CLINE_COMMAND_PERMISSIONS`.
pub struct CommandPermissions;

/// Why a command was denied.
pub struct Denial {
    /// The raw reason code.
    pub reason: &'static str,
    /// The failed segment.
    pub segment: Option<String>,
    /// The matched pattern.
    pub pattern: Option<String>,
}

impl CommandPermissions {
    /// Parses the JSON.
    pub fn from_json(_text: &str) -> Result<Self, String> {
        Ok(Self)
    }

    /// Checks a command.
    pub fn check(&self, _command: &str) -> Result<(), Denial> {
        Ok(())
    }
}

/// The model-visible denial text.
pub fn denial_message(command: &str, denial: &Denial) -> String {
    format!("Command \"{command}\" was denied by CLINE_COMMAND_PERMISSIONS. Reason: {}", denial.reason)
}
