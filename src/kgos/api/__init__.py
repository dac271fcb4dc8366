"""HTTP API: ``kgos serve`` (FastAPI on uvicorn). ``create_app`` builds the app; routes live in
``kg`` (/api/kg), ``kgos`` (/api/kgos, spec/000 section 10) and ``experts`` (/api/experts)."""
