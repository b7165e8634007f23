;;; SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
;;; lispbench.lisp - an allocation-heavy Lisp loop for tools/bench_alloc.py's
;;; sbcl arm: `sbcl --script lispbench.lisp SHAPE SECONDS [wait]`. SHAPE:
;;;   list    (make-list 100): 1,600 bytes of conses (alloc_list's region)
;;;   vector  (make-array 30): 256-byte vectors (alloc's mixed region)
;;;   large   160 KB double-float arrays (large objects: alloc, each)
;;; Runs SHAPE's operation for SECONDS of wall clock (checked every batch),
;;; then prints one JSON line: ops, ops_per_sec, bytes_per_sec (as
;;; sb-ext:get-bytes-consed counts them), seconds, cpu_seconds, sys_seconds,
;;; ops_per_cpu_sec. wait: first prints {"waiting": PID} and waits for a
;;; SIGUSR1 (a profiler attaches meanwhile; tools/bench_alloc.py's attached()).

(defpackage :lispbench (:use :cl))
(in-package :lispbench)

(declaim (optimize (speed 1) (debug 1) (safety 1)))

(defvar *sink* nil)
(defvar *go* nil)

(defun op-list (n)
  (dotimes (i n)
    (setf *sink* (make-list 100))))

(defun op-vector (n)
  (dotimes (i n)
    (setf *sink* (make-array 30))))

(defun op-large (n)
  (dotimes (i n)
    (setf *sink* (make-array 20000 :element-type 'double-float))))

(defun rusage ()
  "user and system seconds of this process"
  (multiple-value-bind (ok utime stime) (sb-unix:unix-getrusage sb-unix:rusage_self)
    (declare (ignore ok))
    (values (/ utime 1d6) (/ stime 1d6))))

(defun now ()
  (/ (get-internal-real-time) (float internal-time-units-per-second 1d0)))

(defun drive (shape seconds)
  (let* ((fn (cond ((string= shape "list") #'op-list)
                   ((string= shape "vector") #'op-vector)
                   ((string= shape "large") #'op-large)
                   (t (error "shape: list, vector or large, not ~a" shape))))
         (batch (if (string= shape "large") 20 2000))
         (ops 0))
    (multiple-value-bind (u0 s0) (rusage)
      (let ((t0 (now))
            (b0 (sb-ext:get-bytes-consed)))
        (loop
          (funcall fn batch)
          (incf ops batch)
          (when (>= (- (now) t0) seconds)
            (return)))
        (let ((wall (- (now) t0))
              (bytes (- (sb-ext:get-bytes-consed) b0)))
          (multiple-value-bind (u1 s1) (rusage)
            (let ((cpu (+ (- u1 u0) (- s1 s0))))
              (format t "{\"shape\": \"~a\", \"ops\": ~d, \"ops_per_sec\": ~,1f, ~
                         \"bytes_per_sec\": ~,1f, \"seconds\": ~,4f, \"cpu_seconds\": ~,4f, ~
                         \"sys_seconds\": ~,4f, \"ops_per_cpu_sec\": ~,1f}~%"
                      shape ops (/ ops wall) (/ bytes wall) wall cpu (- s1 s0)
                      (if (plusp cpu) (/ ops cpu) 0)))))))))

(let* ((args sb-ext:*posix-argv*)
       (shape (or (second args) "list"))
       (seconds (if (third args) (parse-integer (third args)) 5)))
  (when (and (fourth args) (string= (fourth args) "wait"))
    (sb-sys:enable-interrupt sb-unix:sigusr1
                             (lambda (&rest args) (declare (ignore args)) (setf *go* t)))
    (format t "{\"waiting\": ~d}~%" (sb-unix:unix-getpid))
    (finish-output)
    (loop until *go* do (sleep 0.01)))
  (drive shape seconds)
  (finish-output))
