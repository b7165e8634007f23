;;; SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
;;; lispalloc.lisp - a Lisp program with three allocation sites, for Debian's
;;; sbcl (tests/integration/test_allocsbcl.py):
;;; `sbcl --script lispalloc.lisp [ROUNDS [PAUSE-MS]]`. Each round calls CONS-SITE
;;; (lists: alloc_list's cons region), VECTOR-SITE (small vectors: alloc's
;;; region) and BIG-SITE (double-float arrays of 320 KB: large objects), in
;;; bytes about 4:2:1 (rounds of some 6 MB), then sleeps PAUSE-MS (default 0:
;;; a profiler's reader keeps up). Prints, at its end, the bytes
;;; each site consed as sb-ext:get-bytes-consed counts them
;;; ("site NAME BYTES"), and "total BYTES".

(defpackage :lispalloc (:use :cl))
(in-package :lispalloc)

(declaim (optimize (speed 1) (debug 1) (safety 1)))

(defvar *sink* nil)

(defun cons-site (n)
  (dotimes (i n)
    (setf *sink* (make-list 1000))))

(defun vector-site (n)
  (dotimes (i n)
    (setf *sink* (make-array 100))))

(defun big-site (n)
  (dotimes (i n)
    (setf *sink* (make-array 40000 :element-type 'double-float))))

(defvar *bytes* (list (cons "CONS-SITE" 0) (cons "VECTOR-SITE" 0) (cons "BIG-SITE" 0)))

(defmacro measure (name form)
  `(let ((before (sb-ext:get-bytes-consed)))
     ,form
     (incf (cdr (assoc ,name *bytes* :test #'string=))
           (- (sb-ext:get-bytes-consed) before))))

(defun drive (rounds pause)
  (dotimes (r rounds)
    (measure "CONS-SITE" (cons-site 200))
    (measure "VECTOR-SITE" (vector-site 1600))
    (measure "BIG-SITE" (big-site 3))
    (when (plusp pause)
      (sleep (/ pause 1000)))))

(let* ((args sb-ext:*posix-argv*)
       (rounds (if (> (length args) 1) (parse-integer (second args)) 60))
       (pause (if (> (length args) 2) (parse-integer (third args)) 0)))
  (drive rounds pause)
  (dolist (s *bytes*)
    (format t "site ~a ~d~%" (car s) (cdr s)))
  (format t "total ~d~%" (reduce #'+ *bytes* :key #'cdr))
  (finish-output))
