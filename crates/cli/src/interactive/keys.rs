//! Terminal key events as the view's keys (pi's default bindings, `docs/keybindings.md`).

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

/// pi's keys as `/hotkeys` lists them.
pub(crate) const HOTKEYS: &str = "\
Enter            send (while working: steer)
Alt+Enter        queue a follow-up
Shift+Enter      new line (also Ctrl+J, or \\ then Enter)
Up/Down          move, or browse the prompt history
Alt+Up           queued messages back to the editor
Esc              abort
Ctrl+C           clear the editor; twice to quit
Ctrl+D           quit (empty editor)
Ctrl+L           select a model
Ctrl+X           copy the last reply (also /copy)
Ctrl+P           next model (Shift+Ctrl+P previous)
Shift+Tab        next thinking level
Ctrl+O           expand or collapse tool output
Ctrl+T           show or hide thinking
Ctrl+G           edit the prompt in $VISUAL / $EDITOR
Ctrl+V           paste an image (or text) from the clipboard
Tab              complete a slash command or a path
@                search the workspace's files
!cmd / !!cmd     run a command (!! keeps it from the model)
Ctrl+W / Ctrl+U / Ctrl+K   delete word / to line start / to line end
In /tree: Ctrl+U user only, Ctrl+T no tools, Ctrl+L labeled, Ctrl+A all, Ctrl+D default,
          Ctrl+O next filter, Shift+L edit the label";

/// A key the view acts on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Key {
    /// A character typed.
    Char(char),
    /// Pasted text.
    Paste(String),
    /// `Enter`.
    Enter,
    /// `Shift+Enter` or `Ctrl+J`: a new line.
    NewLine,
    /// `Alt+Enter`: a follow-up.
    AltEnter,
    /// `Backspace`.
    Backspace,
    /// `Delete`.
    Delete,
    /// Arrows.
    Left,
    /// Arrows.
    Right,
    /// Arrows.
    Up,
    /// Arrows.
    Down,
    /// `Alt+Up`: queued messages back to the editor.
    AltUp,
    /// `Home` / `Ctrl+A`.
    Home,
    /// `End` / `Ctrl+E`.
    End,
    /// `Esc`.
    Esc,
    /// `Ctrl+C`.
    CtrlC,
    /// `Ctrl+D`.
    CtrlD,
    /// `Ctrl+W` / `Alt+Backspace`.
    CtrlW,
    /// `Ctrl+U`.
    CtrlU,
    /// `Ctrl+K`.
    CtrlK,
    /// `Ctrl+O`.
    CtrlO,
    /// `Ctrl+T`.
    CtrlT,
    /// `Ctrl+L`.
    CtrlL,
    /// `Ctrl+X`.
    CtrlX,
    /// `Ctrl+P`.
    CtrlP,
    /// `Shift+Ctrl+P`.
    CtrlShiftP,
    /// `Shift+Tab`.
    ShiftTab,
    /// `Tab`.
    Tab,
    /// `Ctrl+G`: the external editor.
    CtrlG,
    /// `Ctrl+V`: paste an image from the clipboard.
    CtrlV,
    /// Anything else.
    Other,
}

/// The key for a terminal key event (`None` for releases).
pub(crate) fn from_event(event: KeyEvent) -> Option<Key> {
    if event.kind == KeyEventKind::Release {
        return None;
    }
    let m = event.modifiers;
    let ctrl = m.contains(KeyModifiers::CONTROL);
    let alt = m.contains(KeyModifiers::ALT);
    let shift = m.contains(KeyModifiers::SHIFT);
    Some(match event.code {
        KeyCode::Enter if alt => Key::AltEnter,
        KeyCode::Enter if shift || ctrl => Key::NewLine,
        KeyCode::Enter => Key::Enter,
        KeyCode::Char('j') if ctrl => Key::NewLine,
        KeyCode::Char('c') if ctrl => Key::CtrlC,
        KeyCode::Char('d') if ctrl => Key::CtrlD,
        KeyCode::Char('w') if ctrl => Key::CtrlW,
        KeyCode::Char('u') if ctrl => Key::CtrlU,
        KeyCode::Char('k') if ctrl => Key::CtrlK,
        KeyCode::Char('o') if ctrl => Key::CtrlO,
        KeyCode::Char('t') if ctrl => Key::CtrlT,
        KeyCode::Char('l') if ctrl => Key::CtrlL,
        KeyCode::Char('x') if ctrl => Key::CtrlX,
        KeyCode::Char('g') if ctrl => Key::CtrlG,
        KeyCode::Char('v') if ctrl => Key::CtrlV,
        KeyCode::Char('a') if ctrl => Key::Home,
        KeyCode::Char('e') if ctrl => Key::End,
        KeyCode::Char('b') if ctrl => Key::Left,
        KeyCode::Char('f') if ctrl => Key::Right,
        KeyCode::Char('p' | 'P') if ctrl && shift => Key::CtrlShiftP,
        KeyCode::Char('p') if ctrl => Key::CtrlP,
        KeyCode::Char(_) if ctrl => Key::Other,
        KeyCode::Char(c) => Key::Char(c),
        KeyCode::Backspace if alt || ctrl => Key::CtrlW,
        KeyCode::Backspace => Key::Backspace,
        KeyCode::Delete => Key::Delete,
        KeyCode::Left => Key::Left,
        KeyCode::Right => Key::Right,
        KeyCode::Up if alt => Key::AltUp,
        KeyCode::Up => Key::Up,
        KeyCode::Down => Key::Down,
        KeyCode::Home => Key::Home,
        KeyCode::End => Key::End,
        KeyCode::Esc => Key::Esc,
        KeyCode::BackTab => Key::ShiftTab,
        KeyCode::Tab if shift => Key::ShiftTab,
        KeyCode::Tab => Key::Tab,
        _ => Key::Other,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(code: KeyCode, m: KeyModifiers) -> Option<Key> {
        from_event(KeyEvent::new(code, m))
    }

    #[test]
    fn pi_s_default_bindings() {
        assert_eq!(key(KeyCode::Enter, KeyModifiers::ALT), Some(Key::AltEnter));
        assert_eq!(key(KeyCode::Enter, KeyModifiers::SHIFT), Some(Key::NewLine));
        assert_eq!(
            key(KeyCode::Char('j'), KeyModifiers::CONTROL),
            Some(Key::NewLine)
        );
        assert_eq!(
            key(KeyCode::Char('c'), KeyModifiers::CONTROL),
            Some(Key::CtrlC)
        );
        assert_eq!(
            key(
                KeyCode::Char('P'),
                KeyModifiers::CONTROL | KeyModifiers::SHIFT
            ),
            Some(Key::CtrlShiftP)
        );
        assert_eq!(
            key(KeyCode::BackTab, KeyModifiers::SHIFT),
            Some(Key::ShiftTab)
        );
        assert_eq!(key(KeyCode::Up, KeyModifiers::ALT), Some(Key::AltUp));
        assert_eq!(
            key(KeyCode::Char('x'), KeyModifiers::NONE),
            Some(Key::Char('x'))
        );
        let mut release = KeyEvent::new(KeyCode::Char('x'), KeyModifiers::NONE);
        release.kind = KeyEventKind::Release;
        assert_eq!(from_event(release), None);
    }
}
