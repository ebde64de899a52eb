//! An element of the page, by its WebDriver reference.

use serde_json::{Value, json};

use super::{Browser, BrowserError, ELEMENT_KEY, css_string};

/// An element found on the current page. It goes stale when the page
/// changes (a navigation, or a script replacing it): find it again then.
#[derive(Debug, Clone)]
pub struct Element<'b> {
    pub(super) browser: &'b Browser,
    pub(super) id: String,
}

impl Element<'_> {
    fn path(&self, rest: &str) -> String {
        format!("/element/{}{rest}", self.id)
    }

    /// The element as a script argument (`arguments[i]` in [`Browser::execute`]).
    pub fn as_arg(&self) -> Value {
        json!({ ELEMENT_KEY: self.id })
    }

    /// Its rendered text, as a user sees it (hidden text excluded).
    pub async fn text(&self) -> Result<String, BrowserError> {
        string(self.browser.get(&self.path("/text")).await?)
    }

    /// The attribute as written in the HTML (`None` when absent).
    pub async fn attr(&self, name: &str) -> Result<Option<String>, BrowserError> {
        let v = self.browser.get(&self.path(&format!("/attribute/{name}"))).await?;
        Ok(v.as_str().map(str::to_owned))
    }

    /// The DOM property (`value`, `checked`, …) as JSON.
    pub async fn property(&self, name: &str) -> Result<Value, BrowserError> {
        self.browser.get(&self.path(&format!("/property/{name}"))).await
    }

    /// The current `value` of a field (what was typed, not the HTML's attribute).
    pub async fn value(&self) -> Result<String, BrowserError> {
        Ok(self.property("value").await?.as_str().unwrap_or_default().to_owned())
    }

    /// Its tag name, lowercase.
    pub async fn tag(&self) -> Result<String, BrowserError> {
        Ok(string(self.browser.get(&self.path("/name")).await?)?.to_ascii_lowercase())
    }

    /// Whether a checkbox, radio button or option is selected.
    pub async fn is_selected(&self) -> Result<bool, BrowserError> {
        Ok(self.browser.get(&self.path("/selected")).await? == true)
    }

    /// Whether it is rendered visibly.
    pub async fn is_displayed(&self) -> Result<bool, BrowserError> {
        Ok(self.browser.get(&self.path("/displayed")).await? == true)
    }

    /// Clicks its centre, scrolling it into view; fails if something covers it.
    pub async fn click(&self) -> Result<(), BrowserError> {
        self.browser.post(&self.path("/click"), json!({})).await.map(drop)
    }

    /// Empties an editable field.
    pub async fn clear(&self) -> Result<(), BrowserError> {
        self.browser.post(&self.path("/clear"), json!({})).await.map(drop)
    }

    /// Types `text` into it, key by key (focusing it first).
    pub async fn send_keys(&self, text: &str) -> Result<(), BrowserError> {
        self.browser.post(&self.path("/value"), json!({ "text": text })).await.map(drop)
    }

    /// In a `<select>`: picks the `<option>` with this `value`, by clicking it
    /// as a user would (so `input`/`change` fire).
    pub async fn select_by_value(&self, value: &str) -> Result<(), BrowserError> {
        let option = self.find(&format!("option[value={}]", css_string(value))).await?;
        option.click().await?;
        if option.is_selected().await? {
            Ok(())
        } else {
            Err(BrowserError::new(
                "element not interactable",
                format!("option {value:?} did not become selected"),
            ))
        }
    }

    /// Submits its form (the element itself, or the form it belongs to), as
    /// pressing its submit button does: validation and `submit` handlers run.
    /// A submit button is sent as the submitter, so its name and value are posted.
    pub async fn submit(&self) -> Result<(), BrowserError> {
        const SUBMIT: &str = "const el = arguments[0];\n\
            const form = el instanceof HTMLFormElement ? el : (el.form || el.closest('form'));\n\
            if (!form) { throw new Error('not in a form'); }\n\
            const submitter = (el.type === 'submit' || el.type === 'image') && el.form === form ? el : null;\n\
            form.requestSubmit(submitter);";
        self.browser.execute(SUBMIT, vec![self.as_arg()]).await.map(drop)
    }

    /// The first descendant matching `css`.
    pub async fn find(&self, css: &str) -> Result<Element<'_>, BrowserError> {
        let v = self.browser.post(&self.path("/element"), super::by_css(css)).await?;
        self.browser.element(&v)
    }

    /// Every descendant matching `css`, in document order.
    pub async fn find_all(&self, css: &str) -> Result<Vec<Element<'_>>, BrowserError> {
        let v = self.browser.post(&self.path("/elements"), super::by_css(css)).await?;
        self.browser.elements(&v)
    }
}

fn string(v: Value) -> Result<String, BrowserError> {
    match v {
        Value::String(s) => Ok(s),
        other => {
            Err(BrowserError::new("unexpected answer", format!("expected a string, got {other}")))
        }
    }
}
