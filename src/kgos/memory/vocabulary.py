"""Word lists for deterministic extraction (spec/002 phase 1): known tools, stopwords, generic words.

The known-tools list is spec/002's "hardcoded known tools: Python, JavaScript, Docker, Git, SQLite,
etc.", widened to the tools people commonly write about. Tools whose name is also an everyday English
word ("Go", "Swift", "Spark", "Excel") only match with their capital letter and not as the first
word of a sentence, where every word is capitalised.
"""

from __future__ import annotations

# canonical name -> extra spellings that mean exactly the same tool (not versions: "python3" stays
# its own entity, for the alias review of kgos.memory.aliases to merge or keep apart)
_TOOLS: dict[str, tuple[str, ...]] = {
    # languages
    "Python": (), "JavaScript": (), "TypeScript": (), "Java": (), "Kotlin": (), "Scala": (),
    "Rust": (), "PHP": (), "Perl": (), "Objective-C": (), "C++": (), "C#": (),
    "Haskell": (), "Elixir": (), "Erlang": (), "Clojure": (), "OCaml": (), "F#": (), "Lua": (),
    "MATLAB": (), "Fortran": (), "COBOL": (), "Zig": (), "Bash": (), "Zsh": (), "PowerShell": (),
    "SQL": (), "HTML": (), "CSS": (), "Sass": (), "WebAssembly": ("wasm",), "Solidity": (),
    # runtimes, frameworks, libraries
    "Node.js": ("nodejs",), "Deno": (), "React": ("reactjs",), "Vue": ("vuejs", "vue.js"),
    "Angular": (), "Svelte": (), "Next.js": ("nextjs",), "Nuxt": (), "Django": (), "Flask": (),
    "FastAPI": (), "Laravel": (), "jQuery": (), "Tailwind": ("tailwindcss",), "Redux": (),
    "GraphQL": (), "gRPC": (), "Pandas": (), "NumPy": (), "SciPy": (), "scikit-learn": ("sklearn",),
    "PyTorch": (), "TensorFlow": (), "Keras": (), "JAX": (), "Hugging Face": ("huggingface",),
    "LangChain": (), "LlamaIndex": (), "Ollama": (), "vLLM": (), "llama.cpp": (), "Pydantic": (),
    "SQLAlchemy": (), "Prisma": (), "Streamlit": (), "Gradio": (), "Electron": (), "Tauri": (),
    "Flutter": (), "React Native": (), "SwiftUI": (), "Qt": (), "OpenCV": (), "Polars": (),
    "Dask": (), "MLflow": (), "Celery": (), "pytest": (), "Jest": (), "Cypress": (),
    "Playwright": (), "Selenium": (), "Webpack": (), "Vite": (), "ESLint": (), "Prettier": (),
    "Ruff": (), "mypy": (), "FAISS": (), "pgvector": (), "NetworkX": (), "igraph": (),
    "Matplotlib": (), "Plotly": (), "Jupyter": ("jupyterlab",), "LaTeX": (), "Markdown": (),
    "YAML": (), "Protobuf": ("protocol buffers",), "OpenAPI": (),
    # data stores and infrastructure
    "SQLite": (), "PostgreSQL": ("postgres",), "MySQL": (), "MariaDB": (), "MongoDB": ("mongo",),
    "Redis": (), "Cassandra": (), "DynamoDB": (), "Elasticsearch": (), "OpenSearch": (),
    "ClickHouse": (), "DuckDB": (), "Neo4j": (), "BigQuery": (), "Supabase": (), "Firebase": (),
    "InfluxDB": (), "TimescaleDB": (), "CouchDB": (), "Memcached": (), "Pinecone": (),
    "Weaviate": (), "Qdrant": (), "Milvus": (), "Kafka": (), "RabbitMQ": (), "Airflow": (),
    "Hadoop": (), "dbt": (), "Docker": (), "Docker Compose": (), "Podman": (),
    "Kubernetes": ("k8s",), "Helm": (), "Terraform": (), "Pulumi": (), "Ansible": (), "Vagrant": (),
    "Nginx": (), "Traefik": (), "Caddy": (), "HAProxy": (), "Istio": (), "Envoy": (),
    "Prometheus": (), "Grafana": (), "Kibana": (), "Datadog": (), "Splunk": (), "MinIO": (),
    "AWS": (), "Azure": (), "GCP": ("google cloud",), "Heroku": (), "Vercel": (), "Netlify": (),
    "Cloudflare": (), "S3": (), "EC2": (), "OpenShift": (), "Argo CD": ("argocd",), "Nix": (),
    "Linux": (), "Ubuntu": (), "Debian": (), "Fedora": (), "Arch Linux": (), "macOS": ("osx",),
    "WSL": (), "Raspberry Pi": (), "Arduino": (),
    # developer tools and services
    "Git": (), "GitHub": (), "GitLab": (), "Bitbucket": (), "GitHub Actions": (), "Jenkins": (),
    "CircleCI": (), "Vim": (), "Neovim": ("nvim",), "Emacs": (), "VS Code": ("vscode", "visual studio code"),
    "IntelliJ": (), "PyCharm": (), "Xcode": (), "Android Studio": (), "Jira": (), "Confluence": (),
    "Trello": (), "Figma": (), "Postman": (), "curl": (), "CMake": (), "Gradle": (), "Maven": (),
    "npm": (), "Yarn": (), "pnpm": (), "pip": (), "Conda": ("anaconda", "miniconda"), "Homebrew": (),
    "tmux": (), "OpenAI": (), "ChatGPT": (), "Copilot": (), "Blender": (), "Godot": (),
    "Unreal Engine": (), "Tableau": (), "Power BI": (), "Metabase": (), "Superset": (),
    "Zapier": (), "Twilio": (), "Kotlin Multiplatform": (), "Spring Boot": (), "Ruby on Rails": (),
}

# Everyday words: matched only with their capital letter, never as a sentence's first word.
_CASED_TOOLS: tuple[str, ...] = (
    "Go", "Ruby", "Swift", "Julia", "Dart", "Bun", "Express", "Spark", "Bootstrap", "Snowflake",
    "Eclipse", "Windows", "Lambda", "Poetry", "Babel", "Unity", "Ray", "Vault", "Chroma", "Stripe",
    "Nomad", "Claude", "Gemini", "Spring", "Rails", "Slack", "Notion", "Excel", "Obsidian", "Sentry",
    "Discord", "Consul", "Kind", "Make", "Black", "Hugo", "Jekyll", "Pages",
)
# Of those, the ones that would be wrong even capitalised in ordinary prose are left out entirely.
_CASED_EXCLUDED = {"Kind", "Make", "Black", "Pages"}

ALIASES_OF_TOOLS: dict[str, str] = {"golang": "Go"}


def known_tools() -> dict[str, str]:
    """lower-case spelling -> canonical name, case-insensitive tools only."""
    table: dict[str, str] = {}
    for name, spellings in _TOOLS.items():
        table[name.lower()] = name
        for spelling in spellings:
            table[spelling.lower()] = name
    table.update(ALIASES_OF_TOOLS)
    return table


def cased_tools() -> tuple[str, ...]:
    return tuple(t for t in _CASED_TOOLS if t not in _CASED_EXCLUDED)


# Function words, pronouns, auxiliaries and fillers: never an entity, and where a phrase ends.
STOPWORDS = frozenset("""
a an the and or but nor if then else so because since as at by for from in into of on onto to with without
via over under than that this these those it its it's itself i i'm i've i'd i'll me my mine myself we we're
us our ours you you're your yours he him his she her hers they them their theirs who whom whose which what
when where why how is are was were be been being am do does did doing done have has had having will would
shall should could can may might must not no nor very really just also too more most much many some any
all every each both either neither there here now today tonight yesterday tomorrow lot lots thing things
stuff something anything everything nothing someone anyone everyone somebody anybody everybody one ones
way ways while until after before about again against between during through up down out off above below
well etc like instead rather other others such same own yet still even only whether though although unless
per vs versus around across along among within upon toward towards whatever whichever whenever however
let let's got get gets getting go goes going gone went make makes made making take takes took use uses used
using try tries tried trying want wants wanted need needs needed keep keeps kept start started stop
stopped okay ok yes yeah sure maybe perhaps probably actually basically definitely always never usually often
sometimes mostly generally currently recently finally already soon again later
""".split())

PRONOUNS = frozenset("""
i me my mine myself we us our ours ourselves you your yours yourself yourselves he him his himself she her
hers herself it its itself they them their theirs themselves this that these those who whom one someone
""".split())

# Leading words dropped from a captured phrase ("the Meshalyzer project", "my new app").
DETERMINERS = frozenset("""
a an the my our your his her their its this that these those some any another every each no
""".split())

# Words that cannot name a project on their own ("a side project", "the new project").
GENERIC = frozenset("""
new old current big small large little personal pet side other same whole entire main latest previous next
last first second third final own group team school class course open source research work home fun hobby
simple quick short long important major minor huge tiny different special real actual existing upcoming
internal external client company
""".split())

# Words that end a decision's clause ("decided to use SQLite because ...").
CLAUSE_BREAKS = frozenset("""
because since but so although though as which while when after before until unless and or then whereas
instead if once given
""".split())

FIRST_PERSON = frozenset({"i", "me", "my", "mine", "myself", "i'm", "i've", "i'd", "we", "our", "us"})
