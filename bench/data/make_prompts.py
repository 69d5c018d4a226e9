#!/usr/bin/env python3
"""Writes bench/data/prompts.jsonl from the labelled list below.

Each prompt lists its acceptable entries as fnmatch patterns over the catalog's entry ids
(kind:name), expanded here so the JSONL names ids only. An empty list marks chit-chat or work
with no match in this catalog (the planner should show nothing). The split was fixed before any
tuning: every third prompt (index % 3 == 2) is holdout, the rest tune.
"""
import fnmatch, json, os

HERE = os.path.dirname(os.path.abspath(__file__))
CAT = os.path.join(HERE, "catalog")

P = [
# --- documents, design, art (anthropics)
("Create a generative art piece with flow fields and particles using p5.js", ["skill:algorithmic-art"]),
("Apply Anthropic's brand colors and typography to this slide", ["skill:brand-guidelines", "skill:theme-factory"]),
("Design a poster for our conference as a PNG, museum-quality visual art", ["skill:canvas-design"]),
("Build an app that calls the Claude API with the Anthropic SDK and prompt caching", ["skill:claude-api"]),
("Help me co-author a design doc for the new billing service, section by section", ["skill:doc-coauthoring"]),
("Build a distinctive landing page frontend with bold typography, not generic AI look", ["skill:frontend-design", "skill:brand-landingpage"]),
("Write our weekly internal status update for leadership", ["skill:internal-comms"]),
("Build an MCP server that exposes our REST API as tools", ["skill:mcp-builder"]),
("Create a new skill that teaches Claude our release process, and evaluate it", ["skill:skill-creator", "skill:writing-skills"]),
("Make an animated GIF for Slack celebrating the launch", ["skill:slack-gif-creator"]),
("Style these slides with a consistent theme, pick fonts and colors", ["skill:theme-factory"]),
("Build a complex claude.ai HTML artifact with React, Tailwind and shadcn/ui components", ["skill:web-artifacts-builder"]),
("Test my local web app with Playwright: click through the signup flow and capture screenshots", ["skill:webapp-testing", "agent:playwright", "skill:e2e-testing-patterns"]),
# --- superpowers workflow
("Let's brainstorm a design for the notification feature before writing any code", ["skill:brainstorming"]),
("I have four independent failing test files, dispatch parallel agents to fix them", ["skill:dispatching-parallel-agents", "skill:parallel-debugging"]),
("Execute the implementation plan in docs/plan.md task by task with review checkpoints", ["skill:executing-plans", "skill:subagent-driven-development"]),
("Implementation is done and tests pass, help me decide whether to merge or open a PR for this branch", ["skill:finishing-a-development-branch"]),
("I received code review feedback on my PR; some suggestions look wrong, how should I respond?", ["skill:receiving-code-review"]),
("Request a code review of my changes before merging", ["skill:requesting-code-review", "skill:code-review-excellence", "agent:*code-reviewer", "agent:review", "agent:team-reviewer"]),
("There's a bug where orders are sometimes duplicated, debug it systematically to find the root cause", ["skill:systematic-debugging", "skill:debugging-strategies", "agent:*debugger", "agent:*error-detective"]),
("Implement the parser using test-driven development: write the failing test first", ["skill:test-driven-development", "agent:*tdd-orchestrator"]),
("Set up an isolated git worktree for this feature branch", ["skill:using-git-worktrees"]),
("Before claiming the fix is complete, verify it by running the tests and showing the output", ["skill:verification-before-completion"]),
("Write a detailed implementation plan for the multi-step refactor from this spec", ["skill:writing-plans"]),
# --- python
("Convert this Python code to asyncio with async/await for concurrent HTTP calls", ["skill:async-python-patterns", "agent:python-pro"]),
("Create a FastAPI project with async endpoints and SQLAlchemy", ["skill:fastapi-templates", "agent:*fastapi-pro"]),
("Write pytest fixtures and mocking for this Python module", ["skill:python-testing-patterns", "agent:python-pro"]),
("Add type hints and make mypy strict pass on the Python package", ["skill:python-type-safety", "agent:python-pro"]),
("Package my Python library for PyPI with pyproject.toml", ["skill:python-packaging", "skill:python-project-structure"]),
("Profile the Python script and speed up the slow loops", ["skill:python-performance-optimization", "agent:python-pro"]),
("Set up uv for dependency management and virtual environments in this Python project", ["skill:uv-package-manager"]),
("Run Celery background jobs for sending emails in Python", ["skill:python-background-jobs"]),
("Add structured logging, metrics and tracing to the Python service", ["skill:python-observability"]),
("Add retries with exponential backoff and timeouts around the flaky Python API calls", ["skill:python-resilience"]),
("Load settings from environment variables with pydantic-settings in Python", ["skill:python-configuration"]),
("Refactor our Django views and models, and add a Django REST framework API", ["agent:*django-pro"]),
("Write Temporal workflow tests in Python", ["skill:temporal-python-testing", "agent:temporal-python-pro"]),
("Fix the Python code style: ruff formatting, naming and docstrings", ["skill:python-code-style"]),
# --- js/ts/frontend
("Use advanced TypeScript generics, conditional and mapped types for this API client", ["skill:typescript-advanced-types", "agent:typescript-pro"]),
("Migrate our Next.js pages to the App Router with server components", ["skill:nextjs-app-router-patterns"]),
("Manage global state in React with Zustand or Redux Toolkit", ["skill:react-state-management"]),
("Upgrade the old React class components to hooks and React 18", ["skill:react-modernization"]),
("Build a design system with Tailwind CSS tokens and component variants", ["skill:tailwind-design-system", "skill:design-system-patterns", "agent:design-system-architect"]),
("Write Jest unit tests for the JavaScript utilities", ["skill:javascript-testing-patterns", "agent:javascript-pro", "agent:*test-automator"]),
("Build a Node.js Express backend with middleware and authentication", ["skill:nodejs-backend-patterns", "agent:javascript-pro"]),
("Make the page layout responsive with container queries and fluid typography", ["skill:responsive-design"]),
("Migrate this AngularJS app to Angular", ["skill:angular-migration", "agent:*legacy-modernizer"]),
("Set up a monorepo with Turborepo remote caching", ["skill:turborepo-caching", "skill:monorepo-management", "agent:monorepo-architect"]),
("Configure an Nx workspace with project boundaries and affected commands", ["skill:nx-workspace-patterns", "skill:monorepo-management", "agent:monorepo-architect"]),
("Build reusable web components with Shadow DOM and custom elements", ["skill:web-component-design"]),
("Add microinteractions and motion to the button hover and loading states", ["skill:interaction-design"]),
("Write Playwright end-to-end tests for the checkout flow", ["skill:e2e-testing-patterns", "agent:playwright", "skill:webapp-testing"]),
("Audit the site for WCAG 2.2 accessibility compliance", ["skill:wcag-audit-patterns", "skill:accessibility-compliance", "agent:accessibility-expert", "skill:screen-reader-testing"]),
("Test the app with VoiceOver and NVDA screen readers", ["skill:screen-reader-testing", "agent:accessibility-expert"]),
# --- mobile / games
("Design the iOS screens following Human Interface Guidelines in SwiftUI", ["skill:mobile-ios-design", "agent:ios-developer"]),
("Build the Android UI with Material Design 3 and Jetpack Compose", ["skill:mobile-android-design", "agent:*mobile-developer"]),
("Structure a React Native app with Expo and navigation", ["skill:react-native-architecture", "skill:react-native-design", "agent:*mobile-developer"]),
("Build a cross-platform Flutter app with Riverpod state management", ["agent:flutter-expert", "agent:*mobile-developer"]),
("Write GDScript for the player controller in my Godot game", ["skill:godot-gdscript-patterns"]),
("Use Unity ECS and DOTS for thousands of entities", ["skill:unity-ecs-patterns", "agent:unity-developer"]),
("Write a Minecraft Bukkit/Spigot plugin with custom commands", ["agent:minecraft-bukkit-pro"]),
# --- systems languages
("Write idiomatic Rust with tokio async tasks and channels", ["skill:rust-async-patterns", "agent:rust-pro"]),
("Use goroutines and channels with a worker pool in Go", ["skill:go-concurrency-patterns", "agent:golang-pro"]),
("Modernize this C++ code with C++20 ranges, RAII and smart pointers", ["agent:cpp-pro", "skill:memory-safety-patterns"]),
("Debug a segfault and memory leak in my C program with valgrind", ["agent:c-pro", "skill:memory-safety-patterns", "agent:*debugger"]),
("Write a Java Spring Boot service with virtual threads", ["agent:java-pro"]),
("Build an ASP.NET Core Web API in C# with Entity Framework", ["skill:dotnet-backend-patterns", "agent:csharp-pro", "agent:dotnet-architect"]),
("Write an Elixir GenServer with OTP supervision", ["agent:elixir-pro"]),
("Refactor this Haskell code to use monad transformers", ["agent:haskell-pro"]),
("Write a Julia package for numerical simulation", ["agent:julia-pro"]),
("Write a Scala Spark job with Akka streams", ["agent:scala-pro", "skill:spark-optimization"]),
("Write a Rails 7 app in Ruby with Hotwire", ["agent:ruby-pro"]),
("Build a Laravel PHP 8 application", ["agent:php-pro"]),
("Write firmware for an ARM Cortex-M microcontroller with DMA and interrupts", ["agent:arm-cortex-expert"]),
("Write a defensive bash script with set -euo pipefail and proper quoting", ["skill:bash-defensive-patterns", "agent:bash-pro", "agent:posix-shell-pro"]),
("Add Bats tests for our shell scripts", ["skill:bats-testing-patterns", "agent:bash-pro"]),
("Configure ShellCheck in CI for the shell scripts", ["skill:shellcheck-configuration"]),
("Make this script POSIX sh compliant so it runs on dash and busybox", ["agent:posix-shell-pro", "agent:bash-pro"]),
# --- infra
("Write Kubernetes manifests: deployment, service and configmap for the API", ["skill:k8s-manifest-generator", "agent:*kubernetes-architect"]),
("Create a Helm chart for our microservice", ["skill:helm-chart-scaffolding", "agent:*kubernetes-architect"]),
("Add Kubernetes network policies, RBAC and pod security standards", ["skill:k8s-security-policies", "agent:*kubernetes-architect"]),
("Set up GitOps with ArgoCD for our clusters", ["skill:gitops-workflow", "agent:*kubernetes-architect"]),
("Write reusable Terraform modules for AWS VPC and EKS", ["skill:terraform-module-library", "agent:*terraform-specialist"]),
("Create GitHub Actions workflows to test, build and deploy", ["skill:github-actions-templates", "skill:deployment-pipeline-design", "agent:*deployment-engineer"]),
("Set up a GitLab CI pipeline with stages and caching", ["skill:gitlab-ci-patterns", "agent:*deployment-engineer"]),
("Configure Istio traffic management: canary routing and retries", ["skill:istio-traffic-management", "agent:service-mesh-expert"]),
("Set up Linkerd service mesh with mTLS", ["skill:linkerd-patterns", "skill:mtls-configuration", "agent:service-mesh-expert"]),
("Configure Prometheus scraping and alerting rules", ["skill:prometheus-configuration", "agent:*observability-engineer"]),
("Build Grafana dashboards for API latency", ["skill:grafana-dashboards", "agent:*observability-engineer"]),
("Add distributed tracing with Jaeger and OpenTelemetry across services", ["skill:distributed-tracing", "agent:*observability-engineer"]),
("Define SLOs and error budgets with burn rate alerts", ["skill:slo-implementation", "agent:*observability-engineer"]),
("Reduce our AWS cloud bill with rightsizing and reserved instances", ["skill:cost-optimization", "agent:*cloud-architect"]),
("Design a multi-cloud architecture across AWS, Azure and GCP", ["skill:multi-cloud-architecture", "agent:*cloud-architect", "agent:hybrid-cloud-architect"]),
("Connect on-premises datacenter to AWS with VPN and Direct Connect", ["skill:hybrid-cloud-networking", "agent:hybrid-cloud-architect", "agent:*network-engineer"]),
("Optimize Bazel build caching for our large monorepo", ["skill:bazel-build-optimization"]),
("Production is down, coordinate the incident response", ["agent:incident-responder", "skill:incident-runbook-templates", "agent:*devops-troubleshooter"]),
("Write a blameless postmortem for last night's outage", ["skill:postmortem-writing"]),
("Write an incident runbook for database failover", ["skill:incident-runbook-templates"]),
("Prepare the on-call handoff notes for the next shift", ["skill:on-call-handoff-patterns"]),
("Store secrets in HashiCorp Vault instead of environment files", ["skill:secrets-management"]),
# --- data / db
("Design a PostgreSQL schema with indexes and constraints for orders", ["skill:postgresql-table-design", "agent:*database-architect", "agent:sql-pro"]),
("Optimize slow SQL queries using EXPLAIN plans and indexes", ["skill:sql-optimization-patterns", "agent:sql-pro", "agent:*database-optimizer"]),
("Write a zero-downtime database schema migration", ["skill:database-migration", "agent:*database-optimizer", "agent:database-admin"]),
("Build Airflow DAGs for the nightly ETL", ["skill:airflow-dag-patterns", "agent:data-engineer"]),
("Write dbt models with tests for the analytics warehouse", ["skill:dbt-transformation-patterns", "agent:data-engineer"]),
("Tune Apache Spark jobs: partitioning, shuffles and memory", ["skill:spark-optimization", "agent:data-engineer"]),
("Add data quality checks with Great Expectations", ["skill:data-quality-frameworks"]),
("Build a RAG pipeline with a vector database and retrieval", ["skill:rag-implementation", "agent:ai-engineer", "agent:vector-database-engineer"]),
("Choose an embedding model and chunking strategy for semantic search", ["skill:embedding-strategies", "agent:vector-database-engineer"]),
("Combine BM25 keyword search with vector search in hybrid retrieval", ["skill:hybrid-search-implementation", "agent:vector-database-engineer"]),
("Tune HNSW index parameters for recall and latency", ["skill:vector-index-tuning", "agent:vector-database-engineer"]),
("Build a LangChain agent with tools and memory", ["skill:langchain-architecture", "agent:ai-engineer"]),
("Write better prompts with few-shot examples and chain-of-thought", ["skill:prompt-engineering-patterns", "agent:prompt-engineer", "agent:prompt-crafter"]),
("Evaluate our LLM app outputs with automated metrics and LLM-as-judge", ["skill:llm-evaluation", "skill:evaluation-methodology", "agent:eval-judge", "agent:llm-finetuning-eval-engineer"]),
("Fine-tune Llama with LoRA/QLoRA on a single GPU", ["skill:lora-qlora-recipes", "agent:llm-finetuning-training-engineer", "skill:finetuning-method-selection"]),
("Build an MLOps pipeline for training and deploying models", ["skill:ml-pipeline-workflow", "agent:mlops-engineer", "agent:ml-engineer"]),
("Train a DPO preference model on chosen/rejected pairs", ["skill:preference-optimization", "agent:llm-finetuning-training-engineer"]),
("Build a recommendation system pipeline with candidate retrieval and ranking", ["skill:recsys-pipeline-architect"]),
("Analyze this dataset and build a predictive model with statistics", ["agent:data-scientist"]),
# --- architecture & backend
("Design a REST API with proper resource naming, pagination and versioning", ["skill:api-design-principles", "agent:*backend-architect"]),
("Generate an OpenAPI 3.1 spec for our endpoints", ["skill:openapi-spec-generation", "agent:*api-documenter"]),
("Design a GraphQL schema with federation", ["agent:*graphql-architect"]),
("Write an architecture decision record for choosing Kafka", ["skill:architecture-decision-records"]),
("Apply clean architecture and hexagonal ports and adapters to the backend", ["skill:architecture-patterns", "agent:*architect-review"]),
("Split the monolith into microservices with service boundaries", ["skill:microservices-patterns", "agent:*backend-architect"]),
("Implement CQRS with separate read and write models", ["skill:cqrs-implementation", "agent:event-sourcing-architect"]),
("Design an event store for event sourcing", ["skill:event-store-design", "agent:event-sourcing-architect", "skill:projection-patterns"]),
("Implement a saga for distributed transactions across order and payment services", ["skill:saga-orchestration", "agent:event-sourcing-architect"]),
("Implement JWT and OAuth2 authentication with refresh tokens", ["skill:auth-implementation-patterns", "agent:*backend-security-coder"]),
("Integrate Stripe payments with checkout and webhooks", ["skill:stripe-integration", "agent:payment-integration"]),
("Add PayPal checkout to the store", ["skill:paypal-integration", "agent:payment-integration"]),
("Automate subscription billing, invoices and dunning", ["skill:billing-automation"]),
("Make the app PCI DSS compliant for card data", ["skill:pci-compliance"]),
("Handle personal data under GDPR: consent, erasure and retention", ["skill:gdpr-data-handling"]),
("Draw C4 architecture diagrams of the system", ["agent:c4-*", "agent:mermaid-expert"]),
("Create a Mermaid sequence diagram of the login flow", ["agent:mermaid-expert"]),
("Design durable workflows with Temporal activities and retries", ["skill:workflow-orchestration-patterns", "agent:temporal-python-pro"]),
# --- security
("Build a STRIDE threat model for our API", ["skill:stride-analysis-patterns", "agent:threat-modeling-expert", "skill:attack-tree-construction"]),
("Set up SAST scanning with Semgrep and CodeQL", ["skill:sast-configuration", "agent:*security-auditor"]),
("Audit the Solidity smart contract for reentrancy vulnerabilities", ["skill:solidity-security", "agent:blockchain-developer", "skill:web3-testing"]),
("Reverse engineer this binary with Ghidra and IDA", ["skill:binary-analysis-patterns", "agent:reverse-engineer", "agent:firmware-analyst", "skill:protocol-reverse-engineering"]),
("Analyze a malware sample's behavior in a sandbox", ["agent:malware-analyst", "skill:binary-analysis-patterns"]),
("Do memory forensics on a RAM dump with Volatility", ["skill:memory-forensics"]),
("Reverse engineer the network protocol from packet captures", ["skill:protocol-reverse-engineering", "agent:reverse-engineer"]),
("Extract security requirements from the threat model into user stories", ["skill:security-requirement-extraction", "skill:threat-mitigation-mapping"]),
("Configure mutual TLS between services with certificate rotation", ["skill:mtls-configuration", "agent:service-mesh-expert"]),
# --- git & process
("Clean up my git history with interactive rebase and cherry-pick", ["skill:git-advanced-workflows"]),
("Generate a changelog from conventional commits and automate releases", ["skill:changelog-automation"]),
("Upgrade our dependencies across major versions safely", ["skill:dependency-upgrade", "agent:*legacy-modernizer"]),
("Build a design token system and component library for the design team", ["skill:design-system-patterns", "agent:design-system-architect", "skill:tailwind-design-system"]),
# --- business & content
("Build a startup financial model with revenue projections and burn rate", ["skill:startup-financial-modeling", "agent:startup-analyst"]),
("Estimate TAM, SAM and SOM for our market", ["skill:market-sizing-analysis", "agent:startup-analyst"]),
("Analyze our competitors and positioning", ["skill:competitive-landscape", "agent:startup-analyst", "agent:business-analyst"]),
("Backtest this trading strategy on historical data", ["skill:backtesting-frameworks", "agent:quant-analyst"]),
("Calculate VaR and Sharpe ratio for the portfolio", ["skill:risk-metrics-calculation", "agent:risk-manager", "agent:quant-analyst"]),
("Draft an employment contract and offer letter", ["skill:employment-contract-templates", "agent:hr-pro", "agent:legal-advisor"]),
("Write a privacy policy and terms of service for our app", ["agent:legal-advisor"]),
("Find keyword opportunities for our blog SEO", ["agent:seo-keyword-strategist", "agent:seo-content-planner"]),
("Write meta titles and descriptions for our product pages", ["agent:seo-meta-optimizer"]),
("Write a blog post and social media content for the product launch", ["agent:content-marketer", "agent:seo-content-writer", "skill:social-publishing"]),
("Design KPI dashboards for our executives", ["skill:kpi-dashboard-design"]),
("Turn this analysis into a compelling data story for stakeholders", ["skill:data-storytelling"]),
("Draft customer support replies and FAQ answers for our help desk", ["agent:customer-support"]),
("Remove AI-sounding phrases from this text so it reads naturally", ["skill:avoid-ai-writing"]),
("Convert these HEIC photos to JPG and the MP4 to MP3", ["skill:file-conversion"]),
("Create a NFT collection with ERC-721 contracts", ["skill:nft-standards", "agent:blockchain-developer"]),
("Build a DeFi staking protocol", ["skill:defi-protocol-templates", "agent:blockchain-developer"]),
# --- no match / chit-chat (empty)
("thanks", []),
("ok, continue", []),
("why?", []),
("looks good to me, go ahead", []),
("hello there", []),
("great job", []),
("yes", []),
("no, stop", []),
("can you explain that again?", []),
("what do you think?", []),
("sounds good", []),
("perfect, thank you so much!", []),
("hmm, not sure about that", []),
("try again", []),
("keep going", []),
("what's the weather like in Paris today?", []),
("tell me a joke", []),
("what time is it?", []),
("who won the football match yesterday?", []),
("recommend a good pasta recipe for dinner", []),
("how tall is Mount Everest?", []),
("translate 'good morning' into French", []),
("what's the capital of Australia?", []),
("write a haiku about autumn", []),
("undo that last change", []),
("show me the diff", []),
("rename the variable x to count", []),
("what does this function do?", []),
("commit it", []),
("run it again", []),
("fix the typo in the README", []),
("that's wrong, use the other one", []),
("nevermind", []),
("can you make it shorter?", []),
("wait", []),
("go on", []),
("I'm back, where were we?", []),
("good morning!", []),
("please summarise what you just did", []),
("How many legs does a spider have?", []),
("lol", []),
("ok", []),
("Which one is better?", []),
("Plan my trip to Japan next spring", []),
("Book a table for two at 8pm", []),
]


def ids():
    out = []
    for source in sorted(os.listdir(CAT)):
        root = os.path.join(CAT, source)
        if not os.path.isdir(root):
            continue
        for name in os.listdir(os.path.join(root, "skills")) if os.path.isdir(os.path.join(root, "skills")) else []:
            out.append("skill:" + name)
        for name in os.listdir(os.path.join(root, "agents")) if os.path.isdir(os.path.join(root, "agents")) else []:
            out.append("agent:" + name[:-3])
    return sorted(out)


def main():
    all_ids = ids()
    with open(os.path.join(HERE, "prompts.jsonl"), "w") as f:
        for i, (prompt, patterns) in enumerate(P):
            acceptable = sorted({e for p in patterns for e in fnmatch.filter(all_ids, p)})
            for p in patterns:
                if not fnmatch.filter(all_ids, p):
                    raise SystemExit(f"no entry matches {p!r} ({prompt!r})")
            split = "holdout" if i % 3 == 2 else "tune"
            f.write(json.dumps({"prompt": prompt, "acceptable": acceptable, "split": split}) + "\n")
    print(len(P), "prompts,", sum(1 for _, p in P if not p), "without a match")


if __name__ == "__main__":
    main()
