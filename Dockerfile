# One image for the web server, the Celery workers (lab-worker too) and beat, and the one-shot migrate job.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    DJANGO_SETTINGS_MODULE=studyapp.settings \
    DJANGO_DEBUG=0 \
    STUDY_VAR_DIR=/app/var \
    WEB_CONCURRENCY=3

WORKDIR /app

RUN groupadd --system --gid 10001 study \
    && useradd --system --uid 10001 --gid study --home-dir /app --no-create-home \
       --shell /usr/sbin/nologin study

# bubblewrap runs learner lab code (labs/sandbox/, docs/labs.md); nothing else is added.
RUN apt-get update \
    && apt-get install -y --no-install-recommends bubblewrap libseccomp2 \
    && rm -rf /var/lib/apt/lists/*

# Dependencies first, pinned by the lock file alone, so a code change reuses this layer.
COPY requirements/prod.lock /tmp/prod.lock
RUN pip install -r /tmp/prod.lock \
    && rm /tmp/prod.lock

COPY . .
# Editable, so templates, deck files and static sources stay where settings look for them.
RUN pip install --no-deps -e . \
    && DJANGO_SECRET_KEY=collectstatic-only python manage.py collectstatic --noinput \
    && mkdir -p /app/var \
    && chown study:study /app/var

USER study

EXPOSE 8000

CMD ["gunicorn", "studyapp.wsgi:application", "--bind", "0.0.0.0:8000", "--worker-tmp-dir", "/dev/shm", "--access-logfile", "-"]
