//! The intent rules' word lists, kept apart from the rules: data, one list a
//! named signal, so a decision is explained by the list that matched. Each holds
//! the common terms of the languages clients write in. Not formatted by rustfmt
//! (one word a line would make them hundreds of lines long).

pub(super) const SMALL_TALK: &[&str] = &[
    "hi", "hello", "hey", "heya", "yo", "thanks", "thank", "you", "thx", "ty", "cheers", "ok",
    "okay", "great", "cool", "nice", "awesome", "perfect", "bye", "goodbye", "good", "morning",
    "night", "evening", "afternoon", "got", "it", "sounds", "appreciate", "much", "so", "very",
    "lol", "sure", "np", "welcome", "you're", "that's", "all", "for", "now", "see", "ya", "later",
    "again", "a", "lot", "was", "that", "is", "it's", "really", "super", "done", "wonderful",
    "excellent", "brilliant", "the", "help", "helpful", "there", "how", "are", "hola", "gracias",
    "mate", "everything", "know", "to", "brb", "afk", "lunch", "back", "in", "bit", "muchas", "adiós", "adios", "buenos", "días", "dias", "buenas", "noches", "danke",
    "dankeschön", "schön", "vielen", "dank", "hallo", "tschüss", "guten", "tag", "morgen", "merci",
    "beaucoup", "bonjour", "salut", "bonsoir", "obrigado", "obrigada", "olá", "ola", "oi", "tchau",
    "ciao", "grazie", "mille", "buongiorno", "спасибо", "привет", "пока", "большое", "شكرا",
    "مرحبا", "धन्यवाद", "नमस्ते", "शुक्रिया",
];

pub(super) const SMALL_TALK_PHRASES: &[&str] = &[
    "こんにちは", "ありがとう", "ありがとうございます", "ありがとうございました", "おはよう", "おはようございます", "こんばんは", "さようなら", "你好",
    "谢谢", "谢谢你", "多谢", "再见", "안녕하세요", "감사합니다", "고맙습니다", "안녕",
];

pub(super) const WRITING_VERBS: &[&str] = &[
    "write", "compose", "draft", "craft", "pen", "create", "make", "give me", "turn", "need",
    "escribe", "escribir", "redacta", "schreib", "schreibe", "verfasse", "écris", "écrire",
    "rédige", "scrivi", "escreva", "escrever", "書いて", "作って", "写", "लिखो", "लिखिए", "लिखें",
    "напиши",
];

pub(super) const WRITING_OBJECTS: &[&str] = &[
    "poem", "poems", "haiku", "limerick", "sonnet", "lyrics", "song", "story", "short story",
    "essay", "email", "e-mail", "cover letter", "letter", "tweet", "slogan", "tagline", "toast",
    "speech", "blog post", "post", "caption", "announcement", "newsletter", "bio", "message",
    "poema", "cuento", "correo", "carta", "gedicht", "geschichte", "poème", "histoire", "lettre",
    "poesia", "storia", "lettera", "詩", "メール", "手紙", "诗", "邮件", "故事", "कविता", "कहानी",
    "стихотворение", "письмо", "рассказ",
];

pub(super) const REWORKING: &[&str] = &[
    "summarize", "summarise", "summary", "tl;dr", "proofread", "paraphrase", "rewrite", "resumen",
    "resume", "resumir", "zusammenfassung", "zusammenfassen", "résumé", "résumer", "riassunto",
    "riassumi", "resumo", "要約", "总结", "摘要", "सारांश", "резюме",
];

pub(super) const TRANSLATE: &[&str] = &[
    "translate", "traduce", "traduire", "traduzir", "übersetze", "traduci", "翻訳", "翻译",
];

pub(super) const TERSE: &[&str] = &[
    "one word", "one-word", "just the name", "just the number", "number only", "only the number",
    "only the name", "just the answer", "only the answer", "yes or no", "true or false",
    "positive, negative or neutral", "answer only", "just answer", "sí o no", "ja oder nein",
    "oui ou non", "sim ou não", "just the time", "just the date", "just the price",
    "just the total", "just the figure", "only the time", "only the date", "in one word",
    "just give me the number", "just give me the answer", "nur die zahl", "solo el número",
    "juste le nombre",
];

pub(super) const IMAGE_WORDS: &[&str] = &[
    "image", "picture", "photo", "screenshot", "diagram", "chart", "look again", "look at",
    "in the photo", "imagen", "foto", "bild", "photo", "immagine", "画像", "写真", "字", "图片", "照片",
    "图", "तस्वीर", "фото",
];

pub(super) const EXPLAIN: &[&str] = &[
    "explain", "why", "how does", "how do", "how can", "how should", "describe", "compare",
    "difference", "differences", "pros and cons", "advice", "recommend", "should i", "help me",
    "plan", "ideas", "suggest", "write", "draft", "create", "outline", "analyze", "analyse",
    "review", "explica", "por qué", "erkläre", "erklär", "warum", "explique", "pourquoi", "spiega",
    "perché", "explique", "porque", "説明", "なぜ", "解释", "为什么", "समझा", "क्यों", "объясни", "почему",
    "建议", "怎么", "如何", "アドバイス", "どう", "方法", "consejos", "tipps", "conseils", "dicas", "सुझाव",
    "советы",
];

pub(super) const CODING_TOOLS: &[&str] = &[
    "bash", "shell", "terminal", "exec", "command", "cmd", "read", "write", "edit", "multiedit",
    "patch", "grep", "glob", "ls", "dir", "directory", "file", "files", "filesystem", "replace",
    "view", "git", "notebook", "codebase", "code", "apply", "run", "todo", "todowrite",
];

pub(super) const CODING_SYSTEM: &[&str] = &[
    "software engineer", "software engineering", "coding", "programming", "codebase", "repository",
    "cli", "code", "developer", "pull request", "commit", "terminal", "files",
];

pub(super) const TRACES: &[&str] = &[
    "Traceback (most recent call last)", "Exception in thread", "error[E", "panicked at", "\tat ",
    "    at ", "Segmentation fault", "npm ERR!", "SyntaxError", "TypeError:", "NameError",
    "ReferenceError", "NullPointerException", "undefined reference", "command not found",
    "exited with code", "Uncaught ", "FAILED", "fatal error:", "error: ", "warning: unused",
    "ModuleNotFoundError", "ImportError", "KeyError", "IndexError", "ValueError", "AttributeError",
    "segfault", "core dumped", "stack overflow", "cannot find module", "E0", "CrashLoopBackOff",
    "OOMKilled", "exit status",
];

pub(super) const CODE_LINE_STARTS: &[&str] = &[
    "def ", "class ", "import ", "from ", "fn ", "pub ", "let ", "const ", "var ", "function ",
    "#include", "public ", "private ", "return ", "if (", "for (", "while (", "select ", "SELECT ",
    "INSERT ", "UPDATE ", "CREATE ", "$ ", ">>> ", "<div", "</", "package ", "func ", "async ",
    "await ", "println", "console.", "print(", "echo ", "sudo ", "npm ", "pip ", "cargo ", "git ",
    "kubectl ", "docker ", "curl ", "#!/", "@", "//", "/*", "# ", "use ", "impl ", "struct ",
    "enum ", "interface ", "type ", "export ", "module ",
];

pub(super) const CODE_FILES: &[&str] = &[
    "Dockerfile", "Makefile", "package.json", "Cargo.toml", "go.mod", "requirements.txt",
    "pom.xml", "tsconfig.json", ".gitignore", "docker-compose.yml",
];

pub(super) const CODE_EXTENSIONS: &[&str] = &[
    "py", "rs", "js", "ts", "tsx", "jsx", "go", "java", "kt", "c", "h", "cpp", "hpp", "cs", "rb",
    "php", "swift", "scala", "sh", "bash", "sql", "yaml", "yml", "toml", "json", "tf", "lua", "ex",
    "exs", "ipynb", "vue", "css", "scss", "html", "gradle", "proto",
];

pub(super) const CODE_ASKS: &[&str] = &[
    "write a function", "write a script", "implement", "refactor", "fix the bug", "fix this bug",
    "debug", "unit test", "unit tests", "regex", "regular expression", "sql query",
    "shell command", "bash script", "one-liner", "this code", "my code", "the code", "compile",
    "stack trace", "pull request", "code review", "write code", "in python", "in rust",
    "in javascript", "in typescript", "in go", "in java", "in c++", "dockerfile", "kubernetes",
    "terraform", "github actions", "migration", "endpoint", "api call", "segfault", "memory leak",
    "race condition", "deadlock", "build fails", "build error", "linker",
];

pub(super) const CODE_WORDS: &[&str] = &[
    "function", "method", "variable", "compiler", "bug", "exception", "sql", "api", "json", "yaml",
    "docker", "git", "python", "javascript", "typescript", "rust", "golang", "java", "c++", "c#",
    "kotlin", "bash", "npm", "pip", "cargo", "react", "django", "flask", "css", "html",
    "algorithm", "recursion", "array", "struct", "class", "library", "framework", "repo",
    "repository", "codebase", "script", "program", "code", "async", "thread", "database", "query",
    "schema", "backend", "frontend", "server", "deploy", "ci", "postgres", "postgresql", "mysql",
    "sqlite", "mongodb", "redis", "join", "regex", "pcre", "jinja", "jinja2", "template",
    "matplotlib", "pandas", "numpy", "component", "aria", "commit", "branch", "rebase", "merge",
    "workflow", "pipeline", "shell", "terminal", "compile", "runtime", "null", "index", "loop",
    "parser", "sdk", "cli", "http", "webhook", "oauth", "kubectl", "pod", "container", "aws",
    "s3", "useeffect", "gitignore", "tsconfig", "env", "stderr", "stdout", "localhost",
];

pub(super) const REASONING_STRONG: &[&str] = &[
    "prove", "proof", "theorem", "lemma", "show that", "derive", "derivation", "probability",
    "expected value", "how many ways", "combinatorics", "integral", "derivative", "solve for",
    "logic puzzle", "riddle", "puzzle", "knights and knaves", "by induction", "optimal strategy",
    "game theory", "equilibrium", "bayes", "conditional probability", "permutations",
    "combinations", "modulo", "converge", "converges", "eigenvalue", "minimum number",
    "maximum number", "at least how many", "at most how many", "demuestra", "demostrar",
    "probabilidad", "ecuación", "beweise", "beweisen", "wahrscheinlichkeit", "gleichung",
    "démontrer", "démontre", "prouver", "probabilité", "équation", "dimostra", "probabilità",
    "equazione", "probabilidade", "equação", "demonstre", "証明", "確率", "方程式", "证明", "概率", "方程",
    "증명", "확률", "доказ", "вероятност", "уравнен", "सिद्ध", "प्रायिकता", "संभावना",
    "inclusion-exclusion", "包除原理", "pigeonhole", "invariant", "paradox", "all solutions",
    "maximise", "maximize", "minimise", "minimize", "rate of change", "wahrscheinlich", "knight",
    "fermi", "winning move", "winning strategy", "in how many ways", "сколькими способами",
    "logician", "logicians",
];

/// Quantitative questions: with several numbers in the text, a problem to work.
pub(super) const QUANTITATIVE: &[&str] = &[
    "how many", "how much", "how long", "how fast", "how far", "how likely", "what is the chance",
    "which is better", "when will", "significant", "sample size", "expected", "rate", "odds", "chance",
    "cuántos", "cuánto", "wie viele", "wie lange", "wie wahrscheinlich", "combien", "quantos",
    "quanto", "quanti", "いくつ", "何通り", "多少", "几", "कितना", "कितने", "कितनी", "сколько",
];

pub(super) const REASONING_WEAK: &[&str] = &[
    "step by step", "think carefully", "reason", "reasoning", "trade-off", "trade-offs",
    "tradeoff", "constraints", "constraint", "schedule", "optimize", "optimise", "minimize",
    "minimise", "maximize", "maximise", "worst case", "rigorous", "rigorously", "justify",
    "calculate", "compute", "estimate", "paso a paso", "schritt für schritt", "étape par étape",
    "show your working", "show the working", "show your work", "walk me through", "convince me",
    "what am i doing wrong", "passo a passo", "raciocínio", "raisonnement", "montre pourquoi",
    "途中の式", "推理", "तर्क", "assumption", "assumptions", "show every stage", "each stage",
    "lay out",
];

/// Units of measured quantities: with several numbers, a quantitative problem.
pub(super) const UNITS: &[&str] = &[
    "m/s", "km/h", "mph", "kg", "kj", "°c", "°f", "kwh", "mg", "ml", "litres", "liters", "hours",
    "minutes", "seconds", "metres", "meters", "grams", "newtons", "joules", "watts", "volts",
    "ohms", "mol", "kelvin", "per hour", "per day", "per second", "per cent", "percent",
];

pub(super) const MATH_NOTATION: &[&str] = &[
    "√", "∫", "∑", "≤", "≥", "≠", "π", "∞", "\\frac", "\\sum", "\\int", "$$", "mod ", "log(",
    "sin(", "cos(", "²", "³", "P(", "×", "α", "σ", "μ",
];

pub(super) const CONSTRAINTS: &[&str] = &[
    "must", "cannot", "can't", "at least", "at most", "exactly", "each", "every", "no two",
    "only if", "unless", "no more than", "no fewer than", "before", "after", "not on",
];
